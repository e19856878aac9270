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
  const iso = /^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : /[zZ]|[+-]\d{2}:?\d{2}$/.test(text) ? text : `${text}Z`;
  const date = new Date(iso);
  if (!isCalendarDate(text.slice(0, 10)) || Number.isNaN(date.getTime())) {
    throw new DurationError(`"${text}" is neither a duration (24h, 7d) nor a date (2024-05-01, 2024-05-01T12:00:00Z)`);
  }
  return date;
}

/**
 * "2024-05-01" names a day of the calendar. Date parsing alone would take "2024-02-30" as 1 March, and
 * an operator's filter would quietly cover the wrong day.
 */
export function isCalendarDate(text: string): boolean {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(text)) return false;
  const date = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(date.getTime()) && date.toISOString().slice(0, 10) === text;
}

/** Milliseconds -> the largest whole unit that fits ("90d", "30m", "1h"), for messages. */
export function formatDuration(ms: number): string {
  for (const unit of ['w', 'd', 'h', 'm'] as const) {
    if (ms >= UNIT_MS[unit] && ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${Math.round(ms / 1000)}s`;
}
