const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;

/** Thrown for an operator's malformed duration or time; the message says what is accepted. */
export class DurationError extends Error {}

/** "30m", "24h", "90d", "2w", "45s" -> milliseconds. */
export function parseDuration(text: string): number {
  const match = /^(\d{1,9})\s*([smhdw])$/.exec(text.trim());
  if (!match) throw new DurationError(`"${text}" is not a duration; use a whole number and a unit: 45s, 30m, 24h, 90d, 2w`);
  const ms = Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
  if (ms === 0) throw new DurationError(`"${text}" is zero; give a positive duration`);
  return ms;
}

/**
 * A point in time given either as a duration ago ("24h" = 24 hours before now) or as an ISO date or
 * date-time ("2024-05-01", "2024-05-01T12:00:00Z"); dates without a zone are UTC.
 */
export function parseTimeReference(text: string, now: Date): Date {
  if (/^\d+\s*[smhdw]$/.test(text.trim())) return new Date(now.getTime() - parseDuration(text));
  const date = parseIsoTime(text);
  if (!date) throw new DurationError(`"${text}" is neither a duration (24h, 7d) nor a date (2024-05-01, 2024-05-01T12:00:00Z)`);
  return date;
}

/** The years a stored time holds (DbTime has four digits, and no event is older than the epoch). */
const EARLIEST_TIME_MS = Date.UTC(1970, 0, 1);
const LATEST_TIME_MS = Date.UTC(9999, 11, 31, 23, 59, 59, 999);

const ISO_TIME = /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(Z|[+-]\d{2}(?::?\d{2})?)?)?$/i;

/**
 * An ISO 8601 date or date-time ("2024-05-01", "2024-05-01T12:00:00Z", "2024-05-01 12:00:00.5+05:30"),
 * UTC unless it names an offset; null for anything else. Every field must be one the calendar and the
 * clock have: Date parsing alone would take "2024-02-30" as 1 March, and a filter would quietly cover
 * the wrong day. With its offset applied the time must fall in 1970-9999, the years a stored time holds.
 */
export function parseIsoTime(text: string): Date | null {
  const match = ISO_TIME.exec(text);
  if (!match) return null;
  const [year, month, day, hour, minute, second] = match.slice(1, 7).map((field) => Number(field ?? 0)) as [number, number, number, number, number, number];
  const daysInMonth = month >= 1 && month <= 12 ? new Date(Date.UTC(year, month, 0)).getUTCDate() : 0;
  if (year < 1970 || day < 1 || day > daysInMonth || hour > 23 || minute > 59 || second > 59) return null;
  const offsetMinutes = offsetOf(match[8] ?? 'Z');
  if (offsetMinutes === null) return null;
  const milliseconds = Number((match[7] ?? '').padEnd(3, '0').slice(0, 3));
  const time = Date.UTC(year, month - 1, day, hour, minute, second, milliseconds) - offsetMinutes * 60_000;
  return time >= EARLIEST_TIME_MS && time <= LATEST_TIME_MS ? new Date(time) : null;
}

/** "Z", "+05:30", "-0800", "+01" -> minutes east of UTC; null for an offset no clock has. */
function offsetOf(zone: string): number | null {
  if (zone.toUpperCase() === 'Z') return 0;
  const hours = Number(zone.slice(1, 3));
  const minutes = Number(zone.slice(3).replace(':', '') || 0);
  if (hours > 23 || minutes > 59) return null;
  return (zone.startsWith('-') ? -1 : 1) * (hours * 60 + minutes);
}

/** "2024-05-01" names a day of the calendar (one parseIsoTime takes: 1970 to 9999). */
export function isCalendarDate(text: string): boolean {
  return /^\d{4}-\d{2}-\d{2}$/.test(text) && parseIsoTime(text) !== null;
}

/** Milliseconds -> the largest whole unit that fits ("90d", "30m", "1h"), for messages. */
export function formatDuration(ms: number): string {
  for (const unit of ['w', 'd', 'h', 'm'] as const) {
    if (ms >= UNIT_MS[unit] && ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${Math.round(ms / 1000)}s`;
}
