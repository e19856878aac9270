import { isUtf8 } from 'node:buffer';
import { BadRequestError } from '../errors.js';
import { storedKey } from '../model/delivery.js';
import { isRecord } from '../model/json.js';

/** Reading a delivery's body and the fields of a payload, as every provider adapter does. */

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

/**
 * A provider-supplied identifier (event id, event type) as it becomes part of a unique key: trimmed
 * and non-empty; one the database could not hold whole and printable is stored under its digest
 * (storedKey), never refused, never truncated or mangled.
 */
export function identifier(value: unknown, what: string, missingCode = 'bad_request'): string {
  const text = typeof value === 'string' ? value.trim() : typeof value === 'number' ? String(value) : '';
  if (text === '') throw new BadRequestError(`verified delivery has no ${what}`, missingCode);
  return storedKey(text);
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
