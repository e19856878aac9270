/** How commands print: aligned tables for people, JSON for scripts, a progress bar only on a terminal. */

const MAX_CELL = 60;

export type Column<T> = [header: string, cell: (row: T) => unknown];

export function printJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function printTable<T>(rows: T[], columns: Array<Column<T>>): void {
  const cells = rows.map((row) => columns.map(([, cell]) => text(cell(row))));
  const widths = columns.map(([header], i) => Math.max(header.length, ...cells.map((line) => line[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => v.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  process.stdout.write(`${[line(columns.map(([header]) => header.toUpperCase())), ...cells.map(line)].join('\n')}\n`);
}

/** A value as text: dates in ISO form, objects as JSON. */
function shown(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint') return value.toString();
  return JSON.stringify(value) ?? '-';
}

function text(value: unknown): string {
  if (value === null || value === undefined) return '-';
  const single = shown(value).replace(/\s+/g, ' ');
  return single.length > MAX_CELL ? `${single.slice(0, MAX_CELL - 1)}…` : single;
}

/** "key: value" lines, for one record. */
export function printFields(fields: Record<string, unknown>): void {
  const width = Math.max(...Object.keys(fields).map((k) => k.length));
  for (const [key, value] of Object.entries(fields)) {
    process.stdout.write(`${`${key}:`.padEnd(width + 2)}${value === null || value === undefined ? '-' : shown(value)}\n`);
  }
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
