import { createHash, type Hash } from 'node:crypto';

/**
 * A table's checksum, the same on every store: each row's values (columns in name order) as a JSON
 * array, one line per row, rows in id order, through SHA-256. Numbers are written as their decimal
 * text, so a bigint the driver returns as a string on one store and a number on another hashes the
 * same; times are DbTime strings on every store.
 */
export class TableChecksum {
  private readonly hash: Hash = createHash('sha256');
  rows = 0;

  constructor(private readonly columns: readonly string[]) {}

  add(row: Record<string, unknown>): void {
    this.hash.update(`${JSON.stringify(this.columns.map((column) => canonical(row[column])))}\n`);
    this.rows++;
  }

  digest(): string {
    return this.hash.copy().digest('hex');
  }
}

function canonical(value: unknown): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number' || typeof value === 'bigint') return String(value);
  if (typeof value === 'string') return value;
  // No column of the inbox holds anything else; a driver that returned another type would say so here.
  throw new Error(`cannot checksum a value of type ${typeof value}`);
}
