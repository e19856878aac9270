import { isUtf8 } from 'node:buffer';
import { BadRequestError } from '../errors.js';
import { MAX_KEY_LENGTH } from '../model/delivery.js';
import { isRecord } from '../model/json.js';

/** Reading a delivery's body and the fields of a payload, as every provider adapter does. */

export function bodyText(body: Buffer): string {
  if (!isUtf8(body)) throw new BadRequestError('request body is not valid UTF-8', 'malformed_body');
  return body.toString('utf8');
}

export function parseJsonObject(body: Buffer): Record<string, unknown> {
  const text = bodyText(body);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new BadRequestError('request body is not valid JSON', 'malformed_body');
  }
  if (!isRecord(value)) throw new BadRequestError('request body must be a JSON object', 'malformed_body');
  return value;
}

/**
 * Validates a provider-supplied identifier (event id, event type) before it becomes part of a unique
 * key: trimmed, non-empty, bounded and printable, so the database never truncates or mangles it.
 */
export function identifier(value: unknown, what: string, missingCode = 'bad_request'): string {
  const text = typeof value === 'string' ? value.trim() : typeof value === 'number' ? String(value) : '';
  if (text === '') throw new BadRequestError(`verified delivery has no ${what}`, missingCode);
  if (text.length > MAX_KEY_LENGTH) throw new BadRequestError(`${what} is longer than ${MAX_KEY_LENGTH} characters`);
  // eslint-disable-next-line no-control-regex -- control characters are exactly what it refuses
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
