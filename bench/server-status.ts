import { createConnection } from 'mysql2/promise';
import { round } from './stats.js';

/**
 * MariaDB's server-wide counters: statements by kind (`Com_*`), handler calls (`Handler_*`: row reads,
 * writes, updates, deletes, each index entry read) and InnoDB's row operations (`Innodb_rows_*`).
 * They count every session of the server, so another client's work in the same window shows up in
 * the differences: read them on a quiet server, or over a window long enough that it is small.
 */
export type ServerCounters = Record<string, number>;

const COUNTED = /^(Com_|Handler_|Innodb_rows_|Questions$)/;

export async function readServerCounters(mysqlServerUrl: string): Promise<ServerCounters> {
  const connection = await createConnection({ uri: mysqlServerUrl });
  try {
    const [rows] = await connection.query('SHOW GLOBAL STATUS');
    return countersOf(rows as Array<{ Variable_name: string; Value: string }>);
  } finally {
    await connection.end();
  }
}

/** The numeric counters of interest from SHOW GLOBAL STATUS rows. */
export function countersOf(rows: Array<{ Variable_name: string; Value: string }>): ServerCounters {
  const counters: ServerCounters = {};
  for (const { Variable_name: name, Value: value } of rows) {
    if (COUNTED.test(name) && /^\d+$/.test(value)) counters[name] = Number(value);
  }
  return counters;
}

/**
 * What changed between two readings, divided by `per` (events), rounded to 0.01; counters that did
 * not move are left out. The bench's own reading connections add one `Com_show_status` each.
 */
export function countersPer(before: ServerCounters, after: ServerCounters, per: number): ServerCounters {
  const result: ServerCounters = {};
  for (const [name, value] of Object.entries(after)) {
    const delta = value - (before[name] ?? 0);
    if (delta > 0 && per > 0) result[name] = round(delta / per);
  }
  return result;
}

/** The figures a per-event comparison starts from: statements, row writes, row reads, commits (autocommit statements included), all per event. */
export function headline(perEvent: ServerCounters): { statements: number; rowWrites: number; rowReads: number; commits: number } {
  const sum = (pattern: RegExp) => round(Object.entries(perEvent).reduce((total, [name, value]) => (pattern.test(name) ? total + value : total), 0));
  return {
    // Com_stmt_execute counts executions of prepared statements, which also count under their own Com_<kind>.
    statements: sum(/^Com_(select|insert|insert_select|update|update_multi|delete|delete_multi|replace|replace_select)$/),
    rowWrites: sum(/^Handler_(write|update|delete)$/),
    rowReads: sum(/^Handler_read_/),
    commits: sum(/^Handler_commit$/),
  };
}
