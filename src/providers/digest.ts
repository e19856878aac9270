import { createHash, createHmac, timingSafeEqual } from 'node:crypto';

/** The digests providers sign with, and their constant-time comparison. */

export function hmacSha256Hex(secret: string, ...parts: Array<string | Buffer>): string {
  const hmac = createHmac('sha256', secret);
  for (const part of parts) hmac.update(part);
  return hmac.digest('hex');
}

export function sha512Hex(text: string): string {
  return createHash('sha512').update(text, 'utf8').digest('hex');
}

/**
 * Constant-time comparison of a received hex digest with an expected one. Exact text match, like the
 * providers' SDKs (upper-case hex is rejected); only the length check can short-circuit, and lengths
 * are public.
 */
export function digestMatches(received: string, expected: string): boolean {
  const a = Buffer.from(received, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

/** True when any received signature matches any expected one; every pair is compared. */
export function anyDigestMatches(received: readonly string[], expected: readonly string[]): boolean {
  let matched = false;
  for (const r of received) {
    for (const e of expected) matched = digestMatches(r, e) || matched;
  }
  return matched;
}
