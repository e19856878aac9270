import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CommanderError } from 'commander';
import { runBacklog, type BacklogRun } from './backlog.js';
import { CAPACITY_LIMITS, CapacitySearchProgress, trialOf } from './capacity.js';
import { createBenchDatabase, drain, fillHistory, processingStats, settleBacklog, type BenchDatabase } from './database.js';
import type { LoadJob, LoadResult } from './load-generator.js';
import { measureHostPressure } from './host-pressure.js';
import { startLatencyProxy } from './latency-proxy.js';
import { describeMachine, loadAverage } from './machine.js';
import { writeReport } from './report.js';
import type { BenchResults, CapacityRun, ForgedFlood, GrowthRun, Step, TargetRun } from './results.js';
import { databaseCallsPer, readServerCounters } from './server-status.js';
import { readYieldSeconds } from './service-metrics.js';
import { parseSettings, type BenchSettings } from './settings.js';
import { summarise } from './summary.js';
import { buildService, processes, startTarget, TARGETS, type BenchStore, type RunningTarget, type TargetSpec } from './targets.js';

const ROOT = resolve(import.meta.dirname, '..');

/**
 * Load generator processes, kept between steps: starting one (node, tsx, its imports) takes about a
 * second, a dozen times in a quick run. Steps that run at once (the forged flood) get one each.
 */
const loadGenerators = {
  all: new Set<ChildProcess>(),
  idle: [] as ChildProcess[],

  start(): ChildProcess {
    const child = fork(join(ROOT, 'bench/load-generator.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    this.all.add(child);
    child.once('exit', () => this.all.delete(child));
    return child;
  },

  async run(job: LoadJob): Promise<LoadResult> {
    const child = this.idle.pop() ?? this.start();
    let onExit: ((code: number | null) => void) | undefined;
    const result = await new Promise<LoadResult>((resolve, reject) => {
      onExit = (code) => reject(new Error(`the load generator exited with ${code} during a step`));
      child.once('exit', onExit);
      child.once('message', (message) => resolve(message as LoadResult));
      child.send(job);
    }).finally(() => child.off('exit', onExit!));
    this.idle.push(child);
    return result;
  },

  /** Also those in the middle of a step, when the bench is interrupted. */
  stopAll(): void {
    this.idle.length = 0;
    for (const child of this.all) child.kill();
  },
};

let stepCounter = 0;

/** Runs one load step from a separate process and returns what it measured. */
async function load(settings: BenchSettings, url: string, mode: LoadJob['mode'], seconds: number, rate?: number, forged = false): Promise<LoadResult> {
  const step = ++stepCounter;
  const events = Math.ceil(seconds * (rate ?? settings.maxRate));
  return loadGenerators.run({ url, mode, durationSec: seconds, connections: settings.connections, rate, pool: { events, prefix: `s${step}r${process.pid}x`, seed: step, forged } });
}

async function measuredStep(
  settings: BenchSettings,
  spec: TargetSpec,
  database: BenchDatabase,
  target: RunningTarget,
  mode: LoadJob['mode'],
  seconds: number,
  rate?: number,
): Promise<Step> {
  // The counters of a database server (not SQLite's file), unless the target runs without one.
  const counted = !spec.noDatabase && !database.url.startsWith('sqlite:');
  const countersBefore = counted ? await readServerCounters(database.url) : null;
  const serviceBefore = target.cpuSeconds();
  const yieldBefore = spec.kind === 'inbox' ? await readYieldSeconds(target.url) : null;
  const databaseBefore = await database.serverCpuSeconds();
  const pressure = measureHostPressure();
  const result = await load(settings, target.url, mode, seconds, rate);
  const hostPressure = pressure();
  // CPU of the service process and of the database server while the load ran, per acknowledgement.
  const perAck = (before: number | null, after: number | null) =>
    before === null || after === null || result.acks === 0 ? null : Math.round(((after - before) * 1e6) / result.acks) / 1000;
  const serviceCpuMsPerAck = perAck(serviceBefore, target.cpuSeconds());
  const databaseCpuMsPerAck = perAck(databaseBefore, await database.serverCpuSeconds());
  const databaseCalls = countersBefore ? databaseCallsPer(countersBefore, await readServerCounters(database.url), result.acks) : null;
  if (!processes(spec)) return { load: result, serviceCpuMsPerAck, databaseCpuMsPerAck, databaseCalls, processing: null, workersYieldSec: null, hostPressure };
  const drained = await drain(database.store, settings.drainTimeoutSec * 1000);
  if (!drained) console.warn(`  ${spec.name}: processing or the outbox not finished ${settings.drainTimeoutSec}s after the load ended`);
  const yieldAfter = yieldBefore === null ? null : await readYieldSeconds(target.url);
  return {
    load: result,
    serviceCpuMsPerAck,
    databaseCpuMsPerAck,
    databaseCalls,
    processing: await processingStats(database.store, result.startedAt, result.finishedAt, drained ? Date.now() : null),
    workersYieldSec: yieldBefore === null || yieldAfter === null ? null : Math.round((yieldAfter - yieldBefore) * 100) / 100,
    hostPressure,
  };
}

/** Valid deliveries at `rate` alone, then again while a second process sends forged ones at saturation. */
async function forgedFlood(settings: BenchSettings, url: string, rate: number): Promise<ForgedFlood> {
  const quiet = await load(settings, url, 'paced', settings.pacedDurationSec, rate);
  const [valid, forged] = await Promise.all([
    load(settings, url, 'paced', settings.pacedDurationSec, rate),
    load(settings, url, 'saturate', settings.pacedDurationSec, undefined, true),
  ]);
  const perSec = Math.round(forged.requests / ((forged.finishedAt - forged.startedAt) / 1000));
  console.log(
    `  forged flood: valid p99 ${valid.latencyMs.p99} ms (alone ${quiet.latencyMs.p99} ms), ${valid.non2xx + valid.errors} valid refused; ${perSec} forged/s, ${forged.acks} accepted`,
  );
  return { quiet, valid, forged };
}

/** Paced steps: how many seconds had their own p99 over the capacity limit, the worst one, and the generator's own lateness. */
function pacedDetail(l: LoadResult): string {
  if (l.secondP99sMs === null || l.sendLateMs === null) return '';
  const seconds = l.secondP99sMs.filter((p99) => p99 !== null);
  const over = seconds.filter((p99) => p99 > CAPACITY_LIMITS.ackP99Ms).length;
  return ` (${over}/${seconds.length} seconds over ${CAPACITY_LIMITS.ackP99Ms} ms, worst ${Math.max(0, ...seconds)} ms; sent late p99 ${l.sendLateMs.p99} ms)`;
}

function describeStep(spec: TargetSpec, step: Step): string {
  const { load: l, processing: p } = step;
  const latency = `p50 ${l.latencyMs.p50} / p99 ${l.latencyMs.p99} / p99.9 ${l.latencyMs.p99_9} ms${pacedDetail(l)}`;
  const settled = p?.settledAfterMs == null ? '' : `, all done ${(p.settledAfterMs / 1000).toFixed(1)} s after the load`;
  const held = step.workersYieldSec === null ? '' : `, workers yielded ${step.workersYieldSec} s`;
  const processing = p ? `, processed ${p.processedPerSec}/s (keep-up ${p.keepUp}), lag p50 ${p.lagMs.p50} / p99 ${p.lagMs.p99} ms${settled}${held}` : '';
  const pressure = step.hostPressure ? `, host stalls: CPU ${step.hostPressure.cpuMsPerSec} / I/O ${step.hostPressure.ioMsPerSec} ms/s` : '';
  const commits = step.databaseCalls?.commitsPerAck == null ? '' : `, ${step.databaseCalls.commitsPerAck} commits`;
  const calls = step.databaseCalls ? `, database round trips ${step.databaseCalls.roundTripsPerAck ?? '—'}${commits} per ack` : '';
  return `${Math.round(l.acksPerSec)} acks/s, ${latency}, non-2xx ${l.non2xx + l.errors}, service CPU ${step.serviceCpuMsPerAck} ms/ack, database CPU ${step.databaseCpuMsPerAck ?? '—'} ms/ack${calls}, generator CPU ${l.generatorCpuMsPerRequest ?? '—'} ms/request${processing}${pressure}${l.poolWrapped && !spec.noDatabase ? ' [pool wrapped: raise --max-rate]' : ''}`;
}

/** Cleanups of what is running now (targets, databases), also run when the bench is interrupted. */
const running = new Set<() => Promise<void>>();

async function holding<T>(cleanup: () => Promise<void>, body: () => Promise<T>): Promise<T> {
  running.add(cleanup);
  try {
    return await body();
  } finally {
    running.delete(cleanup);
    await cleanup();
  }
}

/** How a target reaches its database: through the latency proxy, when there is one (MariaDB only). */
type Route = (databaseUrl: string) => string;

async function runTarget(settings: BenchSettings, spec: TargetSpec, repetition: number, workDir: string, route: Route): Promise<TargetRun> {
  const database = await createBenchDatabase(spec.store, settings, workDir);
  return holding(
    () => database.drop(),
    async () => {
      // One file per thread (the tsx loader runs in a thread of its own); the largest is the main thread.
      const profile = settings.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(settings.profileDir, `${spec.name}-${repetition}`)}`] : [];
      const target = await startTarget(spec, spec.store === 'mysql' ? route(database.url) : database.url, logDir(settings), { nodeArgs: profile, env: settings.serviceEnv });
      return holding(
        () => target.stop(),
        async () => {
          if (settings.warmupSec > 0) await measuredStep(settings, spec, database, target, 'saturate', settings.warmupSec);
          const paced: Step[] = [];
          for (const rate of settings.rates) {
            const step = await measuredStep(settings, spec, database, target, 'paced', settings.pacedDurationSec, rate);
            console.log(`  ${spec.name} @ ${rate}/s: ${describeStep(spec, step)}`);
            paced.push(step);
          }
          let sustained: Step | null = null;
          if (settings.sustainedRate !== null) {
            sustained = await measuredStep(settings, spec, database, target, 'paced', settings.durationSec, settings.sustainedRate);
            console.log(`  ${spec.name} sustained ${settings.sustainedRate}/s for ${settings.durationSec} s: ${describeStep(spec, sustained)}`);
          }
          // Before saturation, whose backlog can outlast the drain timeout: the flood then meets a settled service.
          const flood = spec.name === 'background' && settings.floodRate !== null ? await forgedFlood(settings, target.url, settings.floodRate) : null;
          const saturation = await measuredStep(settings, spec, database, target, 'saturate', settings.durationSec);
          console.log(`  ${spec.name} saturated (${settings.connections} connections): ${describeStep(spec, saturation)}`);
          return { target: spec.name, repetition, paced, sustained, saturation, flood, peakRssMb: target.peakRssMb() };
        },
      );
    },
  );
}

/** A capacity target started for its search: its service and its database. */
interface StartedTarget {
  spec: TargetSpec;
  database: BenchDatabase;
  target: RunningTarget;
}

/**
 * Starts each target of `specs` on a database of its own, warmed up and settled, then runs `body` with
 * all of them; each is stopped and its database dropped afterwards, also when the bench is interrupted.
 */
async function withCapacityTargets<T>(
  settings: BenchSettings,
  specs: TargetSpec[],
  workDir: string,
  route: Route,
  body: (started: StartedTarget[]) => Promise<T>,
  started: StartedTarget[] = [],
): Promise<T> {
  const spec = specs[started.length];
  if (!spec) return body(started);
  const database = await createBenchDatabase(spec.store, settings, workDir);
  return holding(
    () => database.drop(),
    async () => {
      const target = await startTarget(spec, spec.store === 'mysql' ? route(database.url) : database.url, logDir(settings), { env: settings.serviceEnv });
      return holding(
        () => target.stop(),
        async () => {
          if (settings.warmupSec > 0) await measuredStep(settings, spec, database, target, 'saturate', settings.warmupSec);
          await settleBacklog(database);
          return withCapacityTargets(settings, specs, workDir, route, body, [...started, { spec, database, target }]);
        },
      );
    },
  );
}

/**
 * The capacity searches (bench/capacity.ts) of the given targets, all started at once and taking
 * turns one step at a time, in one order and then the reverse: the tries of a rate and the targets a
 * ratio compares then meet the same minutes of the shared host. Each step starts after the previous
 * one's work is done (or, when it cannot be done within the drain timeout, turned into history), so
 * every step starts on a settled service.
 */
async function runCapacities(settings: BenchSettings, specs: TargetSpec[], repetition: number, workDir: string, route: Route): Promise<CapacityRun[]> {
  return withCapacityTargets(settings, specs, workDir, route, async (started) => {
    const search = { start: settings.capacityStart, refine: settings.capacityRefine, max: settings.maxRate };
    const searches = started.map((one) => ({ ...one, progress: new CapacitySearchProgress(search, settings.capacityTries) }));
    for (let round = 0; searches.some(({ progress }) => progress.nextRate() !== null); round++) {
      for (const { spec, database, target, progress } of round % 2 === 0 ? searches : searches.toReversed()) {
        const rate = progress.nextRate();
        if (rate === null) continue;
        const step = await measuredStep(settings, spec, database, target, 'paced', settings.capacityDurationSec, rate);
        const trial = trialOf(rate, step);
        console.log(`  ${spec.name} capacity step ${rate}/s, try ${progress.nextTry()}: ${trial.passed ? 'pass' : 'FAIL'}: ${describeStep(spec, step)}`);
        progress.record(trial);
        await settleBacklog(database);
      }
    }
    return searches.map(({ spec, progress }) => ({ target: spec.name, repetition, trials: progress.trials, capacity: progress.capacity() }));
  });
}

/**
 * The same saturation load against a table that already holds `rows` events, for each size in turn,
 * after the empty table in the same database: each ratio then compares table sizes at one point of
 * the run, not a full table late in a long run against an empty one at its start.
 */
async function runGrowth(settings: BenchSettings, workDir: string, route: Route): Promise<GrowthRun[]> {
  const runs: GrowthRun[] = [];
  const database = await createBenchDatabase('mysql', settings, workDir);
  await holding(
    () => database.drop(),
    async () => {
      let filled = 0;
      for (const rows of [0, ...settings.growth]) {
        if (rows > 0) {
          const started = Date.now();
          await fillHistory(database, rows - filled, filled);
          filled = rows;
          console.log(`growth: table filled to ${rows.toLocaleString('en')} rows in ${Math.round((Date.now() - started) / 1000)} s`);
        }
        for (const name of ['baseline', 'background'].filter((t) => settings.targets.includes(t))) {
          const spec = TARGETS[name]!;
          await settleBacklog(database);
          const target = await startTarget(spec, route(database.url), logDir(settings), { env: settings.serviceEnv });
          await holding(
            () => target.stop(),
            async () => {
              // Warmed up like the empty-table runs, so the ratio compares table sizes, not a cold start.
              if (settings.warmupSec > 0) await measuredStep(settings, spec, database, target, 'saturate', settings.warmupSec);
              const step = await measuredStep(settings, spec, database, target, 'saturate', settings.durationSec);
              console.log(`  ${name} with ${rows.toLocaleString('en')} rows: ${describeStep(spec, step)}`);
              runs.push({ rows, target: name, step, peakRssMb: target.peakRssMb() });
            },
          );
        }
      }
    },
  );
  return runs;
}

/** The backlog step runs on each database the run's targets use. */
export function backlogStores(settings: Pick<BenchSettings, 'backlogEvents' | 'targets' | 'capacityTargets'>): BenchStore[] {
  if (settings.backlogEvents === 0) return [];
  const used = new Set([...settings.targets, ...settings.capacityTargets].map((name) => TARGETS[name]!.store));
  return (['mysql', 'postgres', 'sqlite'] as const).filter((store) => used.has(store));
}

/** The targets' logs, next to the report of the same run, so its non-2xx and errors can be looked into. */
const logDir = (settings: BenchSettings) => join(settings.out, 'logs');

export async function runBench(settings: BenchSettings): Promise<BenchResults> {
  await buildService();
  const workDir = mkdtempSync(join(tmpdir(), 'wi-bench-'));
  rmSync(logDir(settings), { recursive: true, force: true });
  mkdirSync(logDir(settings), { recursive: true });
  if (settings.profileDir) mkdirSync(settings.profileDir, { recursive: true });
  const startedAt = new Date().toISOString();
  const loadAtStart = loadAverage();
  const runs: TargetRun[] = [];
  const backlog: BacklogRun[] = [];
  const capacity: CapacityRun[] = [];
  const proxy = settings.dbLatencyMs > 0 ? await startLatencyProxy(settings.mysqlUrl, settings.dbLatencyMs) : null;
  const route: Route = proxy ? (url) => proxy.route(url) : (url) => url;
  try {
    for (let repetition = 1; repetition <= settings.repeat; repetition++) {
      console.log(`repetition ${repetition} of ${settings.repeat}`);
      // Interleaved, so slow minutes on the shared machine spread over every target alike.
      for (const name of settings.targets) runs.push(await runTarget(settings, TARGETS[name]!, repetition, workDir, route));
      for (const store of backlogStores(settings)) {
        const run = await runBacklog({
          store,
          events: settings.backlogEvents,
          repetition,
          servers: settings,
          workDir,
          logDir: logDir(settings),
          drainTimeoutSec: settings.drainTimeoutSec,
          serviceEnv: settings.serviceEnv,
          profileDir: settings.profileDir,
          route: store === 'mysql' ? route : (url) => url,
          holding,
          record: (url, events) =>
            loadGenerators.run({
              url,
              mode: 'saturate',
              once: true,
              durationSec: 0,
              connections: settings.connections,
              pool: { events, prefix: `b${store}${repetition}r${process.pid}x`, seed: 1000 + repetition },
            }),
        });
        console.log(
          `  backlog on ${store} of ${run.events} events, one worker alone: ${run.eventsPerSec ?? '—'} events/s, worker CPU ${run.serviceCpuMsPerEvent} ms/event, database CPU ${run.databaseCpuMsPerEvent ?? '—'} ms/event, ${run.statementsPerEvent} statements, ${run.rowWritesPerEvent ?? '—'} row writes, ${run.commitsPerEvent ?? '—'} commits per event`,
        );
        backlog.push(run);
      }
      const capacitySpecs = settings.capacityTargets.map((name) => TARGETS[name]!);
      capacity.push(...(await runCapacities(settings, capacitySpecs, repetition, workDir, route)));
    }
    const growth = settings.growth.length > 0 ? await runGrowth(settings, workDir, route) : [];
    const results: BenchResults = {
      startedAt,
      finishedAt: new Date().toISOString(),
      command: ['npm run bench', ...(settings.argv.length > 0 ? ['--', ...settings.argv] : [])].join(' '),
      machine: await describeMachine(settings, loadAtStart),
      settings: { ...settings, out: undefined, profileDir: undefined },
      runs,
      growth,
      backlog,
      capacity,
      summary: summarise(settings, runs, growth, backlog, capacity),
    };
    writeReport(settings.out, results);
    return results;
  } finally {
    loadGenerators.stopAll();
    await proxy?.stop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

function settingsOrExit(argv: string[]): BenchSettings {
  try {
    return parseSettings(argv);
  } catch (error) {
    // Commander has already printed the help or the error; a stack trace would only bury it.
    if (error instanceof CommanderError) process.exit(error.exitCode);
    throw error;
  }
}

if (process.argv[1] === import.meta.filename) {
  const settings = settingsOrExit(process.argv.slice(2));
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      console.error(`\n${signal}: stopping targets and dropping the bench databases`);
      loadGenerators.stopAll();
      void Promise.allSettled([...running].map((cleanup) => cleanup())).finally(() => process.exit(130));
    });
  }
  const results = await runBench(settings);
  console.log(`\nresults: ${join(settings.out, 'results.json')}, report: ${join(settings.out, 'report.md')}, targets' logs: ${logDir(settings)}`);
  if (settings.profileDir) console.log(`CPU profiles (.cpuprofile, one per thread; summarise with bench/profile-summary.ts): ${settings.profileDir}`);
  for (const line of results.summary.checks) console.log(`${line.met ? 'MET    ' : 'NOT MET'} ${line.target}: ${line.measured}`);
}
