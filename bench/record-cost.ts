import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { Command } from 'commander';
import { sql, type Kysely } from 'kysely';
import { choiceOption, positiveIntegerOption } from '../src/cli/context.js';
import { DEFAULT_RECORD_CONNECTIONS } from '../src/config/load.js';
import { systemClock } from '../src/clock.js';
import type { InboxDatabase } from '../src/db/schema.js';
import type { VerifiedEvent } from '../src/model/delivery.js';
import { openStore } from '../src/store/open-store.js';
import type { ProviderRegistry } from '../src/providers/registry.js';
import { createBenchDatabase, DEFAULT_SERVERS, type DatabaseServers } from './database.js';
import { buildPool } from './deliveries.js';
import { BASELINE_INSERT, baselineInsertValues, INLINE_BODY_COLUMNS, openPeerDatabase } from './peer-database.js';
import { countersPer, databaseCallsPer, headline, ownTableWrites, readServerCounters } from './server-status.js';
import { median, round } from './stats.js';
import { testProviders } from './test-providers.js';

/**
 * What recording an event costs, apart from HTTP: the bench's deliveries verified once, then recorded
 * with `concurrency` records in flight, either by the store's own record path (`inbox`: group commit,
 * the batch statements or procedure the service runs) or by the baseline's statement (`baseline`: one
 * autocommit INSERT per event, its body inline, on a pool of 10). Each run gets a new database and
 * reads, per event: this process's CPU (the client side: batching, the driver, the protocol), the
 * database server's CPU, and its counters (statements, round trips, row writes). Runs take turns
 * (every variant once, then again), so a host that slows down moves every variant alike.
 *
 * `npm run bench:record -- --store mysql --events 20000 --concurrency 16,64 --repeat 3`
 */

export type RecordVariant = 'inbox' | 'baseline';
export const RECORD_VARIANTS: readonly RecordVariant[] = ['inbox', 'baseline'];

export interface RecordCostOptions extends DatabaseServers {
  store: 'mysql' | 'postgres';
  events: number;
  /** Records in flight at once, like deliveries waiting for their answer; one run per value. */
  concurrency: number[];
  variants: RecordVariant[];
  /** The inbox's record connections (DB_RECORD_CONNECTIONS): each runs one batch at a time. */
  recordConnections: number;
  repeat: number;
}

export interface RecordCostRun {
  variant: RecordVariant;
  concurrency: number;
  repetition: number;
  events: number;
  eventsPerSec: number;
  clientCpuMsPerEvent: number;
  databaseCpuMsPerEvent: number | null;
  /** Statements the server ran (inside a procedure too), per event; null where it does not count them (PostgreSQL without pg_stat_statements). */
  statementsPerEvent: number | null;
  /** Requests the client sent (a CALL is one), per event. */
  roundTripsPerEvent: number | null;
  /** MariaDB's Handler_* writes (the whole server's); on PostgreSQL the rows written to the database's own tables. */
  rowWritesPerEvent: number;
}

/** Deliveries not verified before the measured ones: the JIT, the pools and the buffer pool warm up. */
const WARMUP_EVENTS = 1000;

/** The bench's own deliveries (its mix of providers and sizes), verified as the service would. */
function verifiedEvents(providers: ProviderRegistry, events: number, prefix: string): VerifiedEvent[] {
  const receivedAt = new Date();
  return buildPool({ events, prefix, seed: 7, duplicateShare: 0, burstShare: 0 }).deliveries.map((delivery) =>
    providers.verifier(delivery.path.slice('/webhooks/'.length)).verify({ headers: delivery.headers, body: delivery.body, receivedAt }),
  );
}

/** Runs `record` on every event with `concurrency` of them in flight. */
async function recordAll(events: VerifiedEvent[], concurrency: number, record: (event: VerifiedEvent) => Promise<unknown>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < events.length) await record(events[next++]!);
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
}

async function runOnce(options: RecordCostOptions, variant: RecordVariant, concurrency: number, repetition: number, workDir: string): Promise<RecordCostRun> {
  const providers = testProviders();
  const prefix = `${variant}${concurrency}r${repetition}`;
  const warmup = verifiedEvents(providers, WARMUP_EVENTS, `${prefix}w`);
  const measured = verifiedEvents(providers, options.events, `${prefix}m`);
  const database = await createBenchDatabase(options.store, options, workDir);
  try {
    if (variant === 'baseline') await sql.raw(INLINE_BODY_COLUMNS[options.store]).execute(database.store.db);
    const recorderGone = options.store === 'postgres' ? await backendsGone(database.store.db) : () => Promise.resolve();
    await withRecorder(variant, database.url, options.recordConnections, providers, (record) => recordAll(warmup, concurrency, record));
    await recorderGone();
    const measurement = await withRecorder(variant, database.url, options.recordConnections, providers, async (record) => {
      const counters = await readServerCounters(database.url);
      const databaseCpu = await database.serverCpuSeconds();
      const clientCpu = process.cpuUsage();
      const started = performance.now();
      await recordAll(measured, concurrency, record);
      const seconds = (performance.now() - started) / 1000;
      const { user, system } = process.cpuUsage(clientCpu);
      // Read while the recorder's connections are open: PostgreSQL's CPU is that of the backends seen.
      const databaseCpuAfter = await database.serverCpuSeconds();
      return { counters, seconds, clientCpuSec: (user + system) / 1e6, databaseCpuSec: databaseCpu === null || databaseCpuAfter === null ? null : databaseCpuAfter - databaseCpu };
    });
    await recorderGone();
    const countersAfter = await readServerCounters(database.url);
    const perEvent = countersPer(measurement.counters, countersAfter, options.events);

    const { stored } = await database.store.db
      .selectFrom('webhook_events')
      .select((eb) => eb.fn.countAll<number>().as('stored'))
      .executeTakeFirstOrThrow();
    // A probe that lost events would quote the cost of doing less.
    if (Number(stored) !== WARMUP_EVENTS + options.events) throw new Error(`${variant}: ${Number(stored)} events stored of ${WARMUP_EVENTS + options.events} recorded`);

    const { statements, rowWrites } = headline(perEvent);
    const roundTripsPerEvent = databaseCallsPer(measurement.counters, countersAfter, options.events)?.roundTripsPerAck ?? null;
    const msPerEvent = (cpuSeconds: number) => round((cpuSeconds * 1000) / options.events, 4);
    return {
      variant,
      concurrency,
      repetition,
      events: options.events,
      eventsPerSec: Math.round(options.events / measurement.seconds),
      clientCpuMsPerEvent: msPerEvent(measurement.clientCpuSec),
      databaseCpuMsPerEvent: measurement.databaseCpuSec === null ? null : msPerEvent(measurement.databaseCpuSec),
      // MariaDB counts a procedure's statements under their own kinds; both count them where they count round trips.
      statementsPerEvent: roundTripsPerEvent === null ? null : statements,
      roundTripsPerEvent,
      rowWritesPerEvent: ownTableWrites(perEvent) ?? rowWrites,
    };
  } finally {
    await database.drop();
  }
}

/**
 * PostgreSQL: counts the database's backends now, and returns a wait (5 s at most) until no more
 * than those are left. A backend reports its table counters as it exits, after its client has
 * closed the connection, so counters read before a closed recorder's backends are gone miss some of
 * their writes, or count them in the next reading.
 */
async function backendsGone(db: Kysely<InboxDatabase>): Promise<() => Promise<void>> {
  const backends = async () => {
    const { rows } = await sql<{ n: number }>`select count(*) as n from pg_stat_activity where datname = current_database()`.execute(db);
    return Number(rows[0]!.n);
  };
  const before = await backends();
  return async () => {
    for (let waited = 0; waited < 5000 && (await backends()) > before; waited += 50) await sleep(50);
  };
}

/**
 * Runs `body` with a recorder on a pool of its own, closed before `body`'s result is returned: the
 * counters' next reading then holds all it did (PostgreSQL's backends report when their connections close).
 */
async function withRecorder<T>(
  variant: RecordVariant,
  url: string,
  recordConnections: number,
  providers: ProviderRegistry,
  body: (record: (event: VerifiedEvent) => Promise<unknown>) => Promise<T>,
): Promise<T> {
  if (variant === 'baseline') {
    const peer = openPeerDatabase(url);
    try {
      return await body((event) => peer.execute(BASELINE_INSERT, baselineInsertValues(event, new Date())));
    } finally {
      await peer.end();
    }
  }
  const store = openStore(url, { poolSize: 1, recordConnections, clock: systemClock });
  try {
    return await body((event) => store.record(event, providers.paymentIdOf(event)));
  } finally {
    await store.close();
  }
}

/** Every variant at every concurrency, `repeat` times, taking turns. */
export async function runRecordCost(options: RecordCostOptions, onRun: (run: RecordCostRun) => void = () => {}): Promise<RecordCostRun[]> {
  const workDir = mkdtempSync(join(tmpdir(), 'wi-record-cost-'));
  const runs: RecordCostRun[] = [];
  try {
    for (let repetition = 1; repetition <= options.repeat; repetition++)
      for (const concurrency of options.concurrency)
        for (const variant of options.variants) {
          const run = await runOnce(options, variant, concurrency, repetition, workDir);
          runs.push(run);
          onRun(run);
        }
  } finally {
    rmSync(workDir, { recursive: true, force: true });
  }
  return runs;
}

const cell = (value: number | null) => (value === null ? '—' : String(value));

/** The runs as a markdown table, then each concurrency's medians and the inbox's ratios to the baseline. */
export function recordCostReport(runs: RecordCostRun[]): string {
  const lines = [
    '| variant | in flight | run | events/s | client CPU ms/event | database CPU ms/event | statements/event | round trips/event | row writes/event |',
    '|---|---|---|---|---|---|---|---|---|',
    ...runs
      .map((r) =>
        [
          r.variant,
          r.concurrency,
          r.repetition,
          r.eventsPerSec,
          r.clientCpuMsPerEvent,
          cell(r.databaseCpuMsPerEvent),
          cell(r.statementsPerEvent),
          cell(r.roundTripsPerEvent),
          r.rowWritesPerEvent,
        ].join(' | '),
      )
      .map((row) => `| ${row} |`),
    '',
  ];
  for (const concurrency of new Set(runs.map((r) => r.concurrency))) {
    const medianOf = (variant: RecordVariant, figure: (run: RecordCostRun) => number | null) => {
      const values = runs.filter((r) => r.variant === variant && r.concurrency === concurrency).map(figure);
      return values.length === 0 || values.some((v) => v === null) ? null : median(values as number[]);
    };
    const ratio = (figure: (run: RecordCostRun) => number | null) => {
      const [inbox, baseline] = [medianOf('inbox', figure), medianOf('baseline', figure)];
      return inbox === null || baseline === null || baseline === 0 ? '—' : `${round(inbox / baseline, 2)}x`;
    };
    lines.push(
      `${concurrency} in flight, medians, inbox x baseline: events/s ${ratio((r) => r.eventsPerSec)}, client CPU ${ratio((r) => r.clientCpuMsPerEvent)}, database CPU ${ratio((r) => r.databaseCpuMsPerEvent)}`,
    );
  }
  return lines.join('\n');
}

function listOf<T>(parse: (value: string) => T) {
  return (value: string) => value.split(',').map((part) => parse(part.trim()));
}

async function main(): Promise<void> {
  const options = new Command('bench:record')
    .description("Database and client CPU per recorded event: the store's record path against the baseline's statement")
    .option('--store <store>', 'mysql or postgres', choiceOption(['mysql', 'postgres'] as const), 'mysql' as const)
    .option('--events <n>', 'events recorded per run', positiveIntegerOption, 20_000)
    .option('--concurrency <list>', 'records in flight, one run per value', listOf(positiveIntegerOption), [16, 64])
    .option('--variants <list>', `of ${RECORD_VARIANTS.join(', ')}`, listOf(choiceOption(RECORD_VARIANTS)), [...RECORD_VARIANTS])
    .option('--record-connections <n>', "the inbox's record connections (DB_RECORD_CONNECTIONS)", positiveIntegerOption, DEFAULT_RECORD_CONNECTIONS)
    .option('--repeat <n>', 'rounds of every variant and concurrency', positiveIntegerOption, 3)
    .parse()
    .opts<Omit<RecordCostOptions, keyof DatabaseServers>>();
  const runs = await runRecordCost({ ...DEFAULT_SERVERS, ...options }, (run) => console.error(JSON.stringify(run)));
  console.log(recordCostReport(runs));
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await main();
