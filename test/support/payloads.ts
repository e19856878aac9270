import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** The shared provider samples (../shared/providers/payloads from the project root). */
export const PAYLOADS_DIR = resolve(import.meta.dirname, '../../../shared/providers/payloads');

export function samples(provider: 'stripe' | 'razorpay' | 'payu', suffix: string): Array<{ name: string; text: string }> {
  const dir = join(PAYLOADS_DIR, provider);
  return readdirSync(dir)
    .filter((name) => name.endsWith(suffix) && !name.includes('PARTIAL'))
    .sort()
    .map((name) => ({ name, text: readFileSync(join(dir, name), 'utf8') }));
}
