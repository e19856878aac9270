import { parseIsoTime } from '../config/duration.js';
import { BadRequestError } from '../errors.js';

/** A query or body value the admin API cannot use: a 400 that names the parameter. */
export class AdminInputError extends BadRequestError {
  constructor(
    readonly parameter: string,
    message: string,
  ) {
    super(`${parameter}: ${message}`, 'bad_parameter');
  }
}

export type Query = Record<string, unknown>;

/** A single string value, or undefined when absent or empty; repeated or non-string values are refused. */
export function text(query: Query, name: string, maxLength = 200): string | undefined {
  const value = query[name];
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw new AdminInputError(name, 'must be given once, as text');
  if (value.length > maxLength) throw new AdminInputError(name, `must be at most ${maxLength} characters`);
  return value;
}

export function oneOf<T extends string>(query: Query, name: string, allowed: readonly T[]): T | undefined {
  const value = text(query, name);
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) throw new AdminInputError(name, `must be one of ${allowed.join(', ')}`);
  return value as T;
}

export function integer(query: Query, name: string, range: { min: number; max: number; fallback: number }): number {
  const value = text(query, name, 12);
  if (value === undefined) return range.fallback;
  if (!/^\d+$/.test(value) || Number(value) < range.min || Number(value) > range.max) throw new AdminInputError(name, `must be an integer from ${range.min} to ${range.max}`);
  return Number(value);
}

/** What a time parameter must be, as every refusal of one says. */
const TIME_EXPECTED = 'must be an ISO 8601 time from 1970 to 9999, UTC unless it names an offset, e.g. 2026-12-03T10:00:00Z or 2026-12-03';

/** An ISO 8601 time, e.g. 2026-12-03T10:00:00Z; a date alone means its midnight UTC (parseIsoTime). */
export function time(query: Query, name: string): Date | undefined {
  const value = text(query, name, 40);
  if (value === undefined) return undefined;
  const date = parseIsoTime(value);
  if (!date) throw new AdminInputError(name, TIME_EXPECTED);
  return date;
}

/** A positive row id from a path. */
export function rowId(value: string, name = 'id'): number {
  if (!/^\d{1,15}$/.test(value) || Number(value) < 1) throw new AdminInputError(name, 'must be a positive integer');
  return Number(value);
}
