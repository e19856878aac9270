import type { Clock } from '../clock.js';
import type { StoreBackend } from './backend.js';
import { KyselyInboxStore } from './inbox-store.js';
import { mysqlBackend } from './mysql/mysql-backend.js';
import { sqliteBackend } from './sqlite/sqlite-backend.js';
import type { InboxStore } from './store.js';

const BACKENDS: Record<string, StoreBackend> = { 'mysql:': mysqlBackend, 'sqlite:': sqliteBackend };

export const DATABASE_URL_EXAMPLES = 'sqlite:./data/webhook-inbox.db or mysql://user:password@host:3306/database';

/** What is wrong with a DATABASE_URL, or null when a backend can open it. */
export function databaseUrlProblem(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `is not a valid URL (expected ${DATABASE_URL_EXAMPLES})`;
  }
  const backend = BACKENDS[url.protocol];
  if (!backend) return `must start with sqlite: or mysql:// (got "${url.protocol}")`;
  return backend.validateUrl(url);
}

/** Chooses the store backend once, from the DATABASE_URL scheme (validated by config.ts). */
export function openStore(url: string, options: { poolSize: number; clock: Clock }): InboxStore {
  const problem = databaseUrlProblem(url);
  if (problem) throw new Error(`DATABASE_URL ${problem}`);
  const backend = BACKENDS[new URL(url).protocol]!;
  const ackDb = backend.connect(url, { poolSize: backend.concurrentBatches, preparedStatements: true });
  return new KyselyInboxStore(backend.connect(url, { poolSize: options.poolSize }), ackDb, backend, options.clock, url);
}
