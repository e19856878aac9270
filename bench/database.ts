import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { sql, type Kysely } from 'kysely';
import { createConnection } from 'mysql2/promise';
import pg from 'pg';
import { systemClock } from '../src/clock.js';
import { openStore } from '../src/store/open-store.js';
import { paymentKey } from '../src/store/payment-locks.js';
import { fromDbTime, toDbTime, type InboxDatabase } from '../src/db/schema.js';
import type { KyselyInboxStore } from '../src/store/kysely-store.js';
import { percentiles, round, type Percentiles } from './stats.js';
import { cpuSeconds, type BenchStore } from './targets.js';

/** The database servers the bench creates its databases on. */
export interface DatabaseServers {
  mysqlUrl: string;
  postgresUrl: string;
}

/** The servers of this machine (BENCH_MYSQL_URL and BENCH_POSTGRES_URL name others). */
export const DEFAULT_SERVERS: DatabaseServers = {
  mysqlUrl: process.env.BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306',
  postgresUrl: process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432',
};

/** A database of the bench's own, migrated with the service's migrations and dropped afterwards. */
export interface BenchDatabase {
  url: string;
  store: KyselyInboxStore;
  /**
   * CPU time the database server has used so far for this database, in seconds, when it runs on this
   * machine (a MariaDB/MySQL or PostgreSQL server reached over loopback); null otherwise, SQLite
   * included (it runs in the service's own process). MariaDB's is the whole server's (one process);
   * PostgreSQL's that of the backends serving this database (see PostgresBackendsCpu).
   */
  serverCpuSeconds(): Promise<number | null>;
  drop(): Promise<void>;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);
const isLocal = (serverUrl: string) => LOOPBACK.has(new URL(serverUrl).hostname);

/**
 * The MariaDB/MySQL server the store is connected to, when it runs on this machine: the pid in its
 * pid file. Other servers on the machine (tests start private ones) are not counted.
 */
async function localMysqlPid(store: KyselyInboxStore, mysqlServerUrl: string): Promise<number | null> {
  if (!isLocal(mysqlServerUrl)) return null;
  const { rows } = await sql<{ pidFile: string; dataDir: string }>`select @@pid_file as pidFile, @@datadir as dataDir`.execute(store.db);
  const { pidFile, dataDir } = rows[0]!;
  try {
    return Number(readFileSync(isAbsolute(pidFile) ? pidFile : join(dataDir, pidFile), 'utf8').trim());
  } catch {
    return null; // not readable by the bench's user
  }
}

/**
 * PostgreSQL runs a process per connection, and the shared server of a machine serves other clients
 * too (other databases' tests): the CPU counted is that of the backends connected to this database,
 * found in pg_stat_activity at each reading. A backend that has gone (a pool closed an idle
 * connection) keeps what it had used at the last reading that saw it, so the sum never goes back;
 * what it used after that reading is lost, which is why readings come at the start and end of steps
 * where the pools are busy. The server's shared processes (WAL writer, checkpointer) are not counted.
 */
class PostgresBackendsCpu {
  private readonly seen = new Map<number, number>();

  constructor(private readonly store: KyselyInboxStore) {}

  async read(): Promise<number> {
    const { rows } = await sql<{ pid: number }>`select pid from pg_stat_activity where datname = current_database()`.execute(this.store.db);
    for (const { pid } of rows) {
      try {
        this.seen.set(pid, cpuSeconds(pid));
      } catch {
        // ended since the query: keeps its last reading
      }
    }
    return [...this.seen.values()].reduce((sum, cpu) => sum + cpu, 0);
  }
}

/** Runs `statement` on the PostgreSQL server's maintenance database. */
async function onPostgresServer(postgresServerUrl: string, statement: string): Promise<void> {
  const client = new pg.Client({ connectionString: `${postgresServerUrl.replace(/\/$/, '')}/postgres` });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}

export async function createBenchDatabase(store: BenchStore, servers: DatabaseServers, workDir: string): Promise<BenchDatabase> {
  const name = `wi_bench_${process.pid}_${randomBytes(3).toString('hex')}`;
  const url = {
    mysql: () => `${servers.mysqlUrl.replace(/\/$/, '')}/${name}`,
    // The store creates a missing database itself, byte-order collated as it wants it.
    postgres: () => `${servers.postgresUrl.replace(/\/$/, '')}/${name}`,
    sqlite: () => `sqlite:${join(workDir, `${name}.db`)}`,
  }[store]();
  const opened = openStore(url, { poolSize: 2, clock: systemClock });
  await opened.migrate();
  const serverCpuSeconds = {
    mysql: async () => {
      const pid = await localMysqlPid(opened, servers.mysqlUrl);
      return async () => (pid === null ? null : cpuSeconds(pid));
    },
    postgres: async () => {
      const backends = new PostgresBackendsCpu(opened);
      return async () => (isLocal(servers.postgresUrl) ? backends.read() : null);
    },
    sqlite: async () => async () => null,
  }[store];
  return {
    url,
    store: opened,
    serverCpuSeconds: await serverCpuSeconds(),
    async drop() {
      await opened.close();
      if (store === 'mysql') {
        const connection = await createConnection({ uri: servers.mysqlUrl });
        await connection.query(`DROP DATABASE IF EXISTS \`${name}\``);
        await connection.end();
      }
      if (store === 'postgres') await onPostgresServer(servers.postgresUrl, `drop database if exists "${name}" with (force)`);
    },
  };
}

export interface ProcessingStats {
  /** Distinct events first recorded during the load window. */
  newEvents: number;
  newPerSec: number;
  /** Events marked processed during the load window. */
  processedPerSec: number;
  /** processed/s over new events/s: 1 means processing kept pace with recording. */
  keepUp: number;
  /** received -> processed, for the events recorded in the window. */
  lagMs: Percentiles;
  /**
   * lagMs of the events about a payment, by their place among that payment's events in the window:
   * the first, the second, the third and later. A later event that arrives while an earlier one is
   * processed waits for it (one event of a payment at a time), which is where a lag's tail comes from.
   */
  lagByPaymentRankMs: [Percentiles, Percentiles, Percentiles];
  /** Events of the window still not processed when the drain wait ended. */
  unprocessed: number;
  /** From the end of the load until every event and every outbox effect was done; null when the drain wait ran out. */
  settledAfterMs: number | null;
}

/**
 * Waits until every event recorded so far is processed (or failed) and every effect it wrote to the
 * outbox is dispatched, up to `timeoutMs`: a step that starts while an earlier step's outbox is still
 * draining would pay for that work in its own CPU and latency figures.
 */
export async function drain(store: KyselyInboxStore, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!(await anyUnfinished(store))) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Whether an event or an effect is still to do. One row each, found through the status indexes: a
 * count of them all would scan the table on PostgreSQL, whose CPU the backlog step charges to the
 * events it measures.
 */
async function anyUnfinished(store: KyselyInboxStore): Promise<boolean> {
  const event = await store.db.selectFrom('webhook_events').select('id').where('status', 'in', ['received', 'processing']).limit(1).executeTakeFirst();
  if (event) return true;
  const effect = await store.db.selectFrom('outbox').select('id').where('status', 'in', ['pending', 'sending']).limit(1).executeTakeFirst();
  return effect !== undefined;
}

/** Processing throughput and lag of the events recorded between `startedAt` and `finishedAt`. */
export async function processingStats(store: KyselyInboxStore, startedAt: number, finishedAt: number, settledAt: number | null): Promise<ProcessingStats> {
  const from = toDbTime(new Date(startedAt));
  const to = toDbTime(new Date(finishedAt));
  const seconds = (finishedAt - startedAt) / 1000;
  const rows = await store.db
    .selectFrom('webhook_events')
    .select(['provider', 'payment_id', 'created_at', 'processed_at'])
    .where('created_at', '>=', from)
    .where('created_at', '<=', to)
    .orderBy('id')
    .execute();
  const processed = await store.db
    .selectFrom('webhook_events')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('processed_at', '>=', from)
    .where('processed_at', '<=', to)
    .executeTakeFirstOrThrow();
  const lags: number[] = [];
  const byRank: [number[], number[], number[]] = [[], [], []];
  const seenOfPayment = new Map<string, number>();
  for (const row of rows) {
    let rank: number | null = null;
    if (row.payment_id !== null) {
      const payment = paymentKey(row.provider, row.payment_id);
      rank = Math.min(seenOfPayment.get(payment) ?? 0, 2);
      seenOfPayment.set(payment, rank + 1);
    }
    if (row.processed_at === null) continue;
    const lag = fromDbTime(row.processed_at).getTime() - fromDbTime(row.created_at).getTime();
    lags.push(lag);
    if (rank !== null) byRank[rank]!.push(lag);
  }
  const processedPerSec = Number(processed.n) / seconds;
  const newPerSec = rows.length / seconds;
  return {
    newEvents: rows.length,
    newPerSec: round(newPerSec),
    processedPerSec: round(processedPerSec),
    keepUp: rows.length === 0 ? 1 : round(processedPerSec / newPerSec, 3),
    lagMs: percentiles(lags),
    lagByPaymentRankMs: [percentiles(byRank[0]), percentiles(byRank[1]), percentiles(byRank[2])],
    unprocessed: rows.length - lags.length,
    settledAfterMs: settledAt === null ? null : Math.max(0, settledAt - finishedAt),
  };
}

/**
 * Turns the work a previous target left (the baseline's rows are never processed; a background run
 * may end with a backlog) into history, so the next target's run measures its own deliveries and
 * not a predecessor's backlog: every unfinished event processed, every unfinished outbox row skipped.
 */
export async function settleBacklog(database: BenchDatabase): Promise<void> {
  const { db } = database.store;
  await db
    .updateTable('webhook_events')
    .set({ status: 'processed', next_attempt_at: null, lease_owner: null, lease_token: null, lease_expires_at: null, outcome: 'settled by the bench' })
    .where('status', '<>', 'processed')
    .execute();
  await db
    .updateTable('outbox')
    .set({ status: 'skipped', next_attempt_at: null, lease_token: null, lease_expires_at: null })
    .where('status', 'in', ['pending', 'sending'])
    .execute();
}

const FILL_CHUNK = 250_000;

/**
 * Adds `rows` processed events of history to webhook_events, and their bodies, fast: INSERT ... SELECT
 * from a generated sequence in chunks (MariaDB's seq_1_to_N tables, SQLite's recursive CTE). Event ids are random, as
 * providers' are, so live inserts land all over the unique index. History payloads are ~0.5 KB
 * (live ones 1-5 KB): the index depth, not the heap size, is what the growth run is about.
 */
export async function fillHistory(database: BenchDatabase, rows: number, offset: number): Promise<void> {
  const db = database.store.db;
  const filler = `'{"id":"evt_history","object":"event","type":"payment_intent.succeeded","data":{"object":{"object":"payment_intent","amount":4900,"currency":"usd","status":"succeeded","metadata":{"user_id":"user_1","course_id":"course_1"},"description":"history row written by the bench fill to grow the table before a growth run; live deliveries are larger"}}}'`;
  for (let done = 0; done < rows; done += FILL_CHUNK) {
    const from = offset + done + 1;
    const to = offset + Math.min(rows, done + FILL_CHUNK);
    const bodiesFrom = await highestEventId(db);
    if (database.store.backend === 'mysql') {
      await sql`INSERT INTO webhook_events (provider, event_id, event_type, status, attempts, outcome, created_at, processed_at)
        SELECT 'stripe', CONCAT('evt_', MD5(seq)), 'payment_intent.succeeded', 'processed', 1, 'applied: history',
               NOW(3) - INTERVAL (90 * 86400 - seq / 100) SECOND, NOW(3) - INTERVAL (90 * 86400 - seq / 100) SECOND
        FROM ${sql.raw(`seq_${from}_to_${to}`)}`.execute(db);
    } else {
      await sql`WITH RECURSIVE seq(n) AS (SELECT ${from} UNION ALL SELECT n + 1 FROM seq WHERE n < ${to})
        INSERT OR IGNORE INTO webhook_events (provider, event_id, event_type, status, attempts, outcome, created_at, processed_at)
        SELECT 'stripe', 'evt_' || lower(hex(randomblob(12))), 'payment_intent.succeeded', 'processed', 1, 'applied: history',
               strftime('%Y-%m-%d %H:%M:%f', 'now', '-90 days', '+' || (n / 100) || ' seconds'), strftime('%Y-%m-%d %H:%M:%f', 'now', '-90 days', '+' || (n / 100) || ' seconds')
        FROM seq`.execute(db);
    }
    await sql`INSERT INTO webhook_event_bodies (event_row_id, payload, headers) SELECT id, ${sql.raw(filler)}, '{}' FROM webhook_events WHERE id > ${bodiesFrom}`.execute(db);
  }
}

async function highestEventId(db: Kysely<InboxDatabase>): Promise<number> {
  const row = await db
    .selectFrom('webhook_events')
    .select((eb) => eb.fn.max('id').as('id'))
    .executeTakeFirstOrThrow();
  return Number(row.id ?? 0);
}
