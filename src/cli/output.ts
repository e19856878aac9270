/** How commands print: aligned tables for people, JSON for scripts, a progress bar only on a terminal. */
import { toDbTime } from '../db/schema.js';

const MAX_CELL = 60;

/** A table column: its header, its cell, and `whole` for one never cut (an error: the part an operator must read). */
export type Column<T> = [header: string, cell: (row: T) => unknown, whole?: 'whole'];

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printTable<T>(rows: T[], columns: Array<Column<T>>): void {
  process.stdout.write(`${tableText(rows, columns)}\n`);
}

/** Aligned columns under upper-case headers, one line per row, each cell on one line and cut at MAX_CELL unless `whole`. */
export function tableText<T>(rows: T[], columns: Array<Column<T>>): string {
  const cells = rows.map((row) =>
    columns.map(([, cell, whole]) => {
      const text = shown(cell(row)).replace(/\s+/g, ' ');
      return whole ? text : cut(text);
    }),
  );
  const widths = columns.map(([header], i) => Math.max(header.length, ...cells.map((line) => line[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  return [line(columns.map(([header]) => header.toUpperCase())), ...cells.map(line)].join('\n');
}

const cut = (text: string) => (text.length > MAX_CELL ? `${text.slice(0, MAX_CELL - 1)}…` : text);

/**
 * A value as printed: `-` for none, times in UTC as the database columns hold them (2024-05-01
 * 12:00:00.000), so every table reads alike. Control characters (a payload's ANSI escapes would
 * drive the operator's terminal) are shown as escapes, not sent.
 */
function asText(value: unknown): string {
  if (value instanceof Date) return toDbTime(value);
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value);
  return JSON.stringify(value) ?? '';
}

function shown(value: unknown): string {
  if (value === null || value === undefined) return '-';
  return printable(asText(value));
}

/** Text with its control characters shown as escapes: what any command prints of stored or provider data. */
export function printable(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what it escapes
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/** "key: value" lines, for one record. */
export function printFields(fields: Record<string, unknown>): void {
  const width = Math.max(...Object.keys(fields).map((k) => k.length));
  for (const [key, value] of Object.entries(fields)) process.stdout.write(`${`${key}:`.padEnd(width + 2)}${shown(value)}\n`);
}

/**
 * A one-line progress bar on stderr, drawn only when stdout is a terminal (never into a pipe, a file
 * or a cron mail). Returns the update function and a `done` that clears the line.
 */
export function progressBar(label: string): { update: (done: number, total: number) => void; done: () => void } {
  if (!process.stdout.isTTY || !process.stderr.isTTY) return { update: () => undefined, done: () => undefined };
  const width = 30;
  return {
    update(done, total) {
      const ratio = total > 0 ? Math.min(1, done / total) : 1;
      const filled = Math.round(ratio * width);
      process.stderr.write(`\r${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${done}/${total}`);
    },
    done: () => process.stderr.write('\r\x1b[2K'),
  };
}
