import { isUtf8 } from 'node:buffer';
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { BadRequestError } from '../errors.js';

/** Building blocks every provider adapter uses: header access, digests, body parsing, event ids. */

export function headerValue(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  if (Array.isArray(value)) return value.join(', ');
  return value === undefined || value === '' ? undefined : value;
}

/** The headers worth storing with an event so it can be verified again later. */
export function keptHeaders(headers: IncomingHttpHeaders, names: string[]): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of names) {
    const value = headerValue(headers, name);
    if (value !== undefined) kept[name] = value;
  }
  return kept;
}

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

export function bodyText(body: Buffer): string {
  if (!isUtf8(body)) throw new BadRequestError('request body is not valid UTF-8', 'malformed_body');
  return body.toString('utf8');
}

/**
 * Parses a JSON object. With `maxDepth`, a body nested deeper (1: an object of scalars) is refused
 * before it is parsed, by one scan of its bytes: JSON.parse would build every nested value first.
 */
export function parseJsonObject(body: Buffer, { maxDepth }: { maxDepth?: number } = {}): Record<string, unknown> {
  const text = bodyText(body);
  if (maxDepth !== undefined && nestsDeeperThan(body, maxDepth)) {
    throw new BadRequestError(`request body nests JSON deeper than ${maxDepth} level${maxDepth === 1 ? '' : 's'}`, 'malformed_body');
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BadRequestError('request body is not valid JSON', 'malformed_body');
  }
  if (!isRecord(value)) throw new BadRequestError('request body must be a JSON object', 'malformed_body');
  return value;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPENERS = new Set([0x5b, 0x7b]);
const CLOSERS = new Set([0x5d, 0x7d]);

/** Whether the JSON text's arrays and objects nest deeper than `maxDepth` (strings skipped). */
function nestsDeeperThan(body: Buffer, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < body.length; i++) {
    const byte = body[i]!;
    if (inString) {
      if (byte === BACKSLASH) i++;
      else if (byte === QUOTE) inString = false;
    } else if (byte === QUOTE) inString = true;
    else if (OPENERS.has(byte) && ++depth > maxDepth) return true;
    else if (CLOSERS.has(byte)) depth--;
  }
  return false;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Identifiers become VARCHAR(255) keys. */
export const MAX_KEY_LENGTH = 255;
/** Short texts (provider names, currencies, statuses) are VARCHAR(64). */
export const MAX_SHORT_TEXT_LENGTH = 64;

/**
 * A UTF-16 surrogate without its pair: a JavaScript string can hold one (JSON's "\ud800" escape),
 * but UTF-8 cannot, so the database drivers store U+FFFD instead and "X\ud800" and "X\udc00" would
 * become one key.
 */
const LONE_SURROGATE = /\p{Cs}/u;

/** Why `text` cannot be stored whole as a key (or a column of `maxLength` characters), or null. */
export function unstorableText(text: string, maxLength = MAX_KEY_LENGTH): string | null {
  if (text.length > maxLength) return `is longer than ${maxLength} characters`;
  if (LONE_SURROGATE.test(text)) return 'is not valid Unicode (it holds a lone UTF-16 surrogate)';
  return null;
}

/**
 * Validates a provider-supplied identifier (event id, event type) before it becomes part of a unique
 * key: trimmed, non-empty, bounded, printable and valid Unicode, so the database never truncates or
 * mangles it.
 */
export function identifier(value: unknown, what: string, missingCode = 'bad_request'): string {
  const text = typeof value === 'string' ? value.trim() : typeof value === 'number' ? String(value) : '';
  if (text === '') throw new BadRequestError(`verified delivery has no ${what}`, missingCode);
  const unstorable = unstorableText(text);
  if (unstorable) throw new BadRequestError(`${what} ${unstorable}`);
  if (/[\u0000-\u001f\u007f]/.test(text)) throw new BadRequestError(`${what} contains control characters`);
  return text;
}

/** Reads a path of plain-object properties, e.g. `path(event, 'data', 'object')`. */
export function path(value: unknown, ...keys: string[]): unknown {
  let current = value;
  for (const key of keys) {
    if (!isRecord(current)) return undefined;
    current = current[key];
  }
  return current;
}

export function stringAt(value: unknown, ...keys: string[]): string | null {
  const found = path(value, ...keys);
  return typeof found === 'string' && found !== '' ? found : null;
}

export function integerAt(value: unknown, ...keys: string[]): number | null {
  const found = path(value, ...keys);
  return typeof found === 'number' && Number.isSafeInteger(found) ? found : null;
}
