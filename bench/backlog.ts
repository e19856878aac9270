import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createBenchDatabase, drain, type DatabaseServers } from './database.js';
import type { LoadResult } from './load-generator.js';
import { countersPer, headline, readServerCounters, type ServerCounters } from './server-status.js';
import { round } from './stats.js';
import { inProcess, ownOn, startTarget, startWorker, TARGETS, type BenchStore } from './targets.js';

/**
 * What processing costs per event, apart from receiving: `events` deliveries recorded by the service
 * without workers (`serve --no-workers`), then one `webhook-inbox worker` started alone on that
 * backlog and timed until every event is processed and every outbox effect done, reading the worker's
 * CPU, the database server's CPU and its statement and row counters over that window (MariaDB's or
 * PostgreSQL's, whichever `store` names). SQLite runs inside the worker: its CPU is the worker's, it
 * has no counters to read, and the statement probe times its statements as they run.
 */
export interface BacklogRun {
  /** The database the backlog was recorded on and worked off. */
  store: BenchStore;
  repetition: number;
  /** Distinct events waiting when the worker started. */
  events: number;
  /** Seconds from the worker's start until everything was done; null when the drain wait ran out. */
  drainSec: number | null;
  eventsPerSec: number | null;
  /** The worker's CPU per event, its start-up (measured on an empty database just before) taken off. */
  serviceCpuMsPerEvent: number;
  workerStartupCpuSec: number;
  databaseCpuMsPerEvent: number | null;
  /** Counter differences per event (MariaDB's Com_*, Handler_*, Innodb_rows_*; PostgreSQL's pg_*): see server-status.ts. */
  perEvent: ServerCounters;
  statementsPerEvent: number;
  /** From the server's counters; null on SQLite, which has none. */
  rowWritesPerEvent: number | null;
  rowReadsPerEvent: number | null;
  commitsPerEvent: number | null;
  /** The worker's statements by shape (bench/statement-probe.mjs), most frequent first. */
  statements: StatementShare[];
}

/** One statement shape of the worker, per processed event. */
export interface StatementShare {
  shape: string;
  perEvent: number;
  rowsChangedPerEvent: number;
  /** Round-trip wall time per event (send to answer, waiting for a connection included; round trips overlap). */
  msPerEvent: number;
  errors: number;
  /** Runs sent for the server to parse and plan anew (PostgreSQL unnamed, MariaDB's text protocol), per event. */
  unpreparedPerEvent: number;
  /** Distinct statement texts of the shape: one per batch size is what a statement cache can hold. */
  texts: number;
}

/** What bench/statement-probe.mjs writes: each shape's count, rows changed, wall time, unprepared runs, distinct texts. */
interface ProbedStatement {
  shape: string;
  count: number;
  rowsChanged: number;
  ms: number;
  errors: number;
  unprepared: number;
  texts: number;
}

const STATEMENT_PROBE = resolve(import.meta.dirname, 'statement-probe.mjs');

export interface BacklogOptions {
  store: BenchStore;
  events: number;
  repetition: number;
  servers: DatabaseServers;
  workDir: string;
  logDir: string;
  drainTimeoutSec: number;
  serviceEnv: Record<string, string>;
  /** Where the worker's --cpu-prof profile goes, or null for none. */
  profileDir: string | null;
  route: (databaseUrl: string) => string;
  /** Sends every delivery of a pool of `events` distinct events to `url` once, at saturation. */
  record: (url: string, events: number) => Promise<LoadResult>;
  /** Called with what is running, so an interrupted bench can stop it. */
  holding: <T>(cleanup: () => Promise<void>, body: () => Promise<T>) => Promise<T>;
}

/** How long an idle worker runs on an empty database to measure what starting one costs. */
const STARTUP_PROBE_MS = 2000;

export async function runBacklog(options: BacklogOptions): Promise<BacklogRun> {
  const database = await createBenchDatabase(options.store, options.servers, options.workDir);
  const url = options.route(database.url);
  return options.holding(
    () => database.drop(),
    async () => {
      const idle = startWorker(url, options.logDir, { env: options.serviceEnv });
      const workerStartupCpuSec = await options.holding(
        () => idle.stop(),
        async () => {
          await new Promise((resolve) => setTimeout(resolve, STARTUP_PROBE_MS));
          idle.assertRunning();
          return idle.cpuSeconds();
        },
      );

      const receiver = await startTarget(TARGETS[ownOn(options.store, 'receive-only')]!, url, options.logDir, { env: options.serviceEnv });
      await options.holding(
        () => receiver.stop(),
        () => options.record(receiver.url, options.events),
      );
      const { waiting } = await database.store.db
        .selectFrom('webhook_events')
        .select((eb) => eb.fn.countAll<number>().as('waiting'))
        .where('status', '=', 'received')
        .executeTakeFirstOrThrow();
      const events = Number(waiting);

      const countersBefore = await readServerCounters(database.url);
      const databaseBefore = await database.serverCpuSeconds();
      const started = performance.now();
      const statementFile = join(options.workDir, `statements-${options.store}-${options.repetition}.json`);
      const profile = options.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(options.profileDir, `${ownOn(options.store, 'backlog-worker')}-${options.repetition}`)}`] : [];
      const worker = startWorker(url, options.logDir, {
        nodeArgs: ['--import', STATEMENT_PROBE, ...profile],
        env: { ...options.serviceEnv, STATEMENT_PROBE_FILE: statementFile },
      });
      return options.holding(
        () => worker.stop(),
        async () => {
          const drained = await drain(database.store, options.drainTimeoutSec * 1000);
          const seconds = (performance.now() - started) / 1000;
          worker.assertRunning();
          const serviceCpu = worker.cpuSeconds() - workerStartupCpuSec;
          const databaseAfter = await database.serverCpuSeconds();
          // The probe writes its file as the worker exits, and PostgreSQL's backends report their
          // counters when their connections close.
          await worker.stop();
          const perEvent = countersPer(countersBefore, await readServerCounters(database.url), events);
          const { statements: statementCount, rowWrites, rowReads, commits } = headline(perEvent);
          const counted = !inProcess(options.store);
          const perEventMs = (cpuSeconds: number) => (events === 0 ? 0 : round((cpuSeconds * 1000) / events, 3));
          const per = (value: number) => (events === 0 ? 0 : round(value / events, 3));
          const statements = (JSON.parse(readFileSync(statementFile, 'utf8')) as ProbedStatement[]).map((s) => ({
            shape: s.shape,
            perEvent: per(s.count),
            rowsChangedPerEvent: per(s.rowsChanged),
            msPerEvent: per(s.ms),
            errors: s.errors,
            unpreparedPerEvent: per(s.unprepared),
            texts: s.texts,
          }));
          return {
            store: options.store,
            repetition: options.repetition,
            events,
            drainSec: drained ? round(seconds, 1) : null,
            eventsPerSec: drained && seconds > 0 ? Math.round(events / seconds) : null,
            serviceCpuMsPerEvent: perEventMs(serviceCpu),
            workerStartupCpuSec: round(workerStartupCpuSec),
            databaseCpuMsPerEvent: databaseBefore === null || databaseAfter === null ? null : perEventMs(databaseAfter - databaseBefore),
            perEvent,
            // PostgreSQL counts statements only with pg_stat_statements, SQLite never; without them, the worker's own from the probe.
            statementsPerEvent:
              statementCount > 0
                ? statementCount
                : round(
                    statements.reduce((sum, s) => sum + s.perEvent, 0),
                    2,
                  ),
            rowWritesPerEvent: counted ? rowWrites : null,
            rowReadsPerEvent: counted ? rowReads : null,
            commitsPerEvent: counted ? commits : null,
            statements,
          };
        },
      );
    },
  );
}
