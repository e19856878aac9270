import { createConnection } from 'mysql2/promise';
import pg from 'pg';
import { round } from './stats.js';

/**
 * A database server's counters.
 *
 * MariaDB's are server-wide: statements by kind (`Com_*`), handler calls (`Handler_*`: row reads,
 * writes, updates, deletes, each index entry read), InnoDB's row operations (`Innodb_rows_*`) and
 * the bytes written to its redo log (`Innodb_os_log_written`), which a small redo log must
 * checkpoint as fast as they come.
 * They count every session of the server, so another client's work in the same window shows up in
 * the differences: read them on a quiet server, or over a window long enough that it is small.
 *
 * PostgreSQL's are the database's own (`pg_stat_database`, prefixed `pg_`): commits, rollbacks, rows
 * inserted, updated, deleted and fetched, blocks; the server's WAL bytes (`pg_wal_bytes`, from
 * `pg_stat_wal`, server-wide like MariaDB's counters); and, when the pg_stat_statements extension is
 * installed in the database (it needs the server's shared_preload_libraries), `pg_statements`, the
 * statements run. A backend reports its counters when its transaction ends, at most once a second
 * while busy, and when its connection closes: read them after the connections being measured closed.
 */
export type ServerCounters = Record<string, number>;

/** A database server's work per acknowledgement, from its counters (bench/server-status.ts). */
export interface DatabaseCalls {
  /**
   * Statements its clients sent, each a round trip: MariaDB's `Questions` (a CALL is one, the
   * statements it runs are not counted), PostgreSQL's pg_stat_statements calls; null where the
   * server does not count them (PostgreSQL without that extension).
   */
  roundTripsPerAck: number | null;
  /**
   * Transactions committed, autocommitted and read-only ones included: PostgreSQL's xact_commit.
   * Null on MariaDB, whose Handler_commit also counts the commit of each statement inside a
   * transaction or a procedure, which makes it no count of transactions.
   */
  commitsPerAck: number | null;
}

const COUNTED = /^(Com_|Handler_|Innodb_rows_|Innodb_os_log_written$|Questions$)/;

/** The counters of the server `databaseUrl` points at (MariaDB/MySQL or PostgreSQL, by its scheme). */
export async function readServerCounters(databaseUrl: string): Promise<ServerCounters> {
  // SQLite is a library inside each process, with no server to count for all of them.
  if (databaseUrl.startsWith('sqlite:')) return {};
  if (/^postgres(ql)?:/.test(databaseUrl)) return readPostgresCounters(databaseUrl);
  const connection = await createConnection({ uri: databaseUrl });
  try {
    const [rows] = await connection.query('SHOW GLOBAL STATUS');
    return countersOf(rows as Array<{ Variable_name: string; Value: string }>);
  } finally {
    await connection.end();
  }
}

async function readPostgresCounters(databaseUrl: string): Promise<ServerCounters> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query<Record<string, string | null>>(
      `select xact_commit, xact_rollback, tup_returned, tup_fetched, tup_inserted, tup_updated, tup_deleted, blks_read, blks_hit
       from pg_stat_database where datname = current_database()`,
    );
    const { rows: wal } = await client.query<{ pg_wal_bytes: string }>(`select wal_bytes as pg_wal_bytes from pg_stat_wal`);
    const { rows: tables } = await client.query<TableReads>(
      `select schemaname, relname, seq_tup_read, idx_tup_fetch, idx_scan, n_tup_ins + n_tup_upd + n_tup_del as tup_written from pg_stat_all_tables where schemaname not in ('information_schema', 'pg_toast')`,
    );
    const { rows: extension } = await client.query(`select 1 from pg_extension where extname = 'pg_stat_statements'`);
    const statements =
      extension.length === 0
        ? []
        : (
            await client.query<{ pg_statements: string | null }>(
              `select sum(calls) as pg_statements from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())`,
            )
          ).rows;
    return { ...postgresCountersOf({ ...rows[0], ...wal[0], ...statements[0] }), ...tableReadCounters(tables) };
  } finally {
    await client.end();
  }
}

/** A row of pg_stat_all_tables: what index and sequential scans of one table read, and the rows written to it. */
export interface TableReads {
  schemaname: string;
  relname: string;
  seq_tup_read: string | number | null;
  idx_tup_fetch: string | number | null;
  idx_scan: string | number | null;
  /** Rows inserted, updated and deleted. */
  tup_written: string | number | null;
}

/**
 * Per table, the rows its sequential scans read (`pg_seq_read:TABLE`), the rows its index scans
 * fetched (`pg_idx_fetch:TABLE`), its index scans (`pg_idx_scans:TABLE`) and the rows written to it
 * (`pg_writes:TABLE`); the catalogs' tables are named with their schema. pg_stat_database's
 * tup_fetched says how many rows were read, these say where.
 */
export function tableReadCounters(tables: TableReads[]): ServerCounters {
  return postgresCountersOf(
    Object.fromEntries(
      tables.flatMap((table) => {
        const name = table.schemaname === 'public' ? table.relname : `${table.schemaname}.${table.relname}`;
        return [
          [`pg_seq_read:${name}`, table.seq_tup_read],
          [`pg_idx_fetch:${name}`, table.idx_tup_fetch],
          [`pg_idx_scans:${name}`, table.idx_scan],
          [`pg_writes:${name}`, table.tup_written],
        ];
      }),
    ),
  );
}

/** The numeric columns of a pg_stat_database row (and pg_stat_statements' sum), prefixed `pg_`. */
export function postgresCountersOf(row: Record<string, string | number | null | undefined>): ServerCounters {
  const counters: ServerCounters = {};
  for (const [name, value] of Object.entries(row)) {
    if (value !== null && value !== undefined && /^\d+$/.test(String(value))) counters[name.startsWith('pg_') ? name : `pg_${name}`] = Number(value);
  }
  return counters;
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

/**
 * The figures a per-event comparison starts from: statements, row writes, row reads, commits
 * (autocommit statements included), all per event, from either server's counters. On PostgreSQL
 * without pg_stat_statements the statements are 0 here; the statement probe counts the worker's.
 */
export function headline(perEvent: ServerCounters): { statements: number; rowWrites: number; rowReads: number; commits: number } {
  const sum = (pattern: RegExp) => round(Object.entries(perEvent).reduce((total, [name, value]) => (pattern.test(name) ? total + value : total), 0));
  return {
    // Com_stmt_execute counts executions of prepared statements, which also count under their own Com_<kind>.
    statements: sum(/^(Com_(select|insert|insert_select|update|update_multi|delete|delete_multi|replace|replace_select)|pg_statements)$/),
    rowWrites: sum(/^(Handler_(write|update|delete)|pg_tup_(inserted|updated|deleted))$/),
    rowReads: sum(/^(Handler_read_.*|pg_tup_fetched)$/),
    commits: sum(/^(Handler_commit|pg_xact_commit)$/),
  };
}

/**
 * Rows written to the database's own tables (not its catalogs: a migration's catalog writes, which a
 * backend may report long after, stay out), per event, on PostgreSQL; null on MariaDB, whose counters
 * are the whole server's.
 */
export function ownTableWrites(perEvent: ServerCounters): number | null {
  const own = Object.entries(perEvent).filter(([name]) => /^pg_writes:[^.]+$/.test(name));
  return own.length === 0 ? null : round(own.reduce((total, [, value]) => total + value, 0));
}

/**
 * Round trips and commits per acknowledgement between two readings of one server's counters (see
 * DatabaseCalls); a reading's own statement is one among thousands, and stays in.
 */
export function databaseCallsPer(before: ServerCounters, after: ServerCounters, acks: number): DatabaseCalls | null {
  if (acks === 0) return null;
  const delta = (name: string) => (after[name] ?? 0) - (before[name] ?? 0);
  const mysql = 'Questions' in after;
  const roundTrips = mysql ? delta('Questions') : 'pg_statements' in after ? delta('pg_statements') : null;
  return {
    roundTripsPerAck: roundTrips === null ? null : round(roundTrips / acks),
    commitsPerAck: mysql ? null : round(delta('pg_xact_commit') / acks),
  };
}
