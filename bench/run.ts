import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Command, CommanderError, InvalidArgumentError } from 'commander';
import { createBenchDatabase, drain, fillHistory, processingStats, settleBacklog, type BenchDatabase } from './database.js';
import { positiveIntegerOption } from '../src/cli/context.js';
import { writeFlameGraphs } from './flame-graph.js';
import type { LoadJob, LoadResult } from './load-generator.js';
import { startLatencyProxy } from './latency-proxy.js';
import { describeMachine, loadAverage, summarise, writeReport, type BenchResults, type ForgedFlood, type GrowthRun, type Step, type TargetRun } from './report.js';
import { buildService, startTarget, TARGETS, type RunningTarget, type TargetSpec } from './targets.js';

const ROOT = resolve(import.meta.dirname, '..');

export interface BenchSettings {
  /** The command line, as given, so the report names the command that reproduces it. */
  argv: string[];
  quick: boolean;
  durationSec: number;
  /** Unmeasured saturation load before the measured steps: JIT, connection pools and caches warm up. */
  warmupSec: number;
  pacedDurationSec: number;
  rates: number[];
  /** Offered load of the sustained step (processing must keep up over it), or null to skip it. */
  sustainedRate: number | null;
  /** Valid deliveries/s of the forged-flood step (background target), or null to skip it. */
  floodRate: number | null;
  connections: number;
  repeat: number;
  growth: number[];
  targets: string[];
  /** Expected top acknowledgement rate, to size the pre-signed pool of a saturation run. */
  maxRate: number;
  drainTimeoutSec: number;
  mysqlUrl: string;
  /** One-way delay between the targets and MariaDB, through a proxy (a database across a network); 0 for none. */
  dbLatencyMs: number;
  /** Extra environment for the webhook-inbox targets (e.g. WORKER_CONCURRENCY=8), for experiments. */
  serviceEnv: Record<string, string>;
  out: string;
  profileDir: string | null;
}

const list = (parse: (item: string) => number | string) => (value: string) =>
  value === 'none' ? [] : value.split(',').map((item) => {
    const parsed = parse(item.trim());
    if (typeof parsed === 'number' && !(Number.isFinite(parsed) && parsed > 0)) throw new InvalidArgumentError(`"${item}" is not a positive number`);
    return parsed;
  });
const numberWhere = (accepts: (n: number) => boolean, wanted: string) => (value: string) => {
  const parsed = Number(value);
  if (!(Number.isFinite(parsed) && accepts(parsed) && value.trim() !== '')) throw new InvalidArgumentError(`"${value}" must be ${wanted}`);
  return parsed;
};
const atLeast = (min: number) => numberWhere((n) => n >= min, `a number >= ${min}`);
const positive = numberWhere((n) => n > 0, 'a number > 0');
const targetName = (name: string) => {
  if (!(name in TARGETS)) throw new InvalidArgumentError(`unknown target "${name}" (${Object.keys(TARGETS).join(', ')})`);
  return name;
};

const environmentPair = (pair: string, previous: Record<string, string>) => {
  const [key, ...value] = pair.split('=');
  if (!key || value.length === 0) throw new InvalidArgumentError(`takes KEY=VALUE (got "${pair}")`);
  return { ...previous, [key]: value.join('=') };
};

export function parseSettings(argv: string[]): BenchSettings {
  const program = new Command()
    .name('npm run bench --')
    .description('Ack throughput, latency, processing lag and growth: webhook-inbox against a minimal baseline, in one run')
    .option('--quick', 'development run, under a minute: short steps, one repetition, no growth run')
    .option('--duration <s>', 'seconds of each saturation run (full: 60, quick: 2)', positive)
    .option('--warmup <s>', 'seconds of unmeasured load before measuring each target, 0 for none (full: 5, quick: 1)', atLeast(0))
    .option('--paced-duration <s>', 'seconds of each fixed-rate step (full: 10, quick: 2)', positive)
    .option('--rates <list>', 'offered loads of the fixed-rate steps, deliveries/s (full: 250,1000,2000,4000; quick: 1000)', list(Number))
    .option('--sustained <rate>', 'offered load of a fixed-rate step as long as --duration, where processing must keep up (full: 1000; quick: none); 0 skips it', atLeast(0))
    .option('--flood <rate>', 'valid deliveries/s sent while forged ones come at saturation (background target; full and quick: 250); 0 skips it', atLeast(0))
    .option('--connections <n>', 'concurrent connections of the load generator', positiveIntegerOption, 64)
    .option('--repeat <n>', 'repetitions; figures are medians (full: 3, quick: 1)', positiveIntegerOption)
    .option('--growth <list>', 'pre-filled rows for growth runs, or none (full: 1000000,5000000; quick: none)', list(Number))
    .option('--targets <list>', `targets (${Object.keys(TARGETS).join(', ')}); full: all, quick: baseline,background,inline`, list(targetName))
    .option('--max-rate <n>', 'expected top rate, sizes the pre-signed pool', positive, 8000)
    .option('--drain-timeout <s>', 'how long to wait for processing and the outbox to finish after a step', positive)
    .option('--mysql-url <url>', 'MariaDB/MySQL server (the bench creates and drops its own databases)', process.env.BENCH_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306')
    .option('--db-latency <ms>', 'delay each packet between the targets and MariaDB by this much, each way, through a proxy process: a database across a network (default 0: direct)', atLeast(0), 0)
    .option('--service-env <KEY=VALUE...>', 'extra environment for the webhook-inbox targets, e.g. WORKER_CONCURRENCY=8', environmentPair, {})
    .option('--out <dir>', 'where results.json, report.md and latency.svg go', join(ROOT, 'bench/results'))
    .option('--profile <dir>', 'write --cpu-prof profiles of each target process, each with a flame graph beside it (.svg; summarise with bench/profile-summary.ts)')
    .exitOverride()
    .parse(argv, { from: 'user' });
  const o = program.opts<Record<string, unknown>>();
  const quick = o.quick === true;
  const pick = <T>(value: unknown, full: T, fast: T): T => (value === undefined ? (quick ? fast : full) : (value as T));
  return {
    argv,
    quick,
    durationSec: pick(o.duration, 60, 2),
    warmupSec: pick(o.warmup, 5, 1),
    pacedDurationSec: pick(o.pacedDuration, 10, 2),
    rates: pick(o.rates, [250, 1000, 2000, 4000], [1000]),
    sustainedRate: o.sustained === 0 ? null : pick<number | null>(o.sustained, 1000, null),
    floodRate: o.flood === 0 ? null : pick<number | null>(o.flood, 250, 250),
    connections: o.connections as number,
    repeat: pick(o.repeat, 3, 1),
    growth: pick(o.growth, [1_000_000, 5_000_000], []),
    targets: pick(o.targets, Object.keys(TARGETS), ['baseline', 'background', 'inline']),
    maxRate: o.maxRate as number,
    drainTimeoutSec: pick(o.drainTimeout, 120, 20),
    mysqlUrl: o.mysqlUrl as string,
    dbLatencyMs: o.dbLatency as number,
    serviceEnv: o.serviceEnv as Record<string, string>,
    out: resolve(o.out as string),
    profileDir: o.profile ? resolve(o.profile as string) : null,
  };
}

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

async function measuredStep(settings: BenchSettings, spec: TargetSpec, database: BenchDatabase, target: RunningTarget, mode: LoadJob['mode'], seconds: number, rate?: number): Promise<Step> {
  const serviceBefore = target.cpuSeconds();
  const databaseBefore = database.serverCpuSeconds();
  const result = await load(settings, target.url, mode, seconds, rate);
  // CPU of the service process and of the database server while the load ran, per acknowledgement.
  const perAck = (before: number | null, after: number | null) => (before === null || after === null || result.acks === 0 ? null : Math.round(((after - before) * 1e6) / result.acks) / 1000);
  const serviceCpuMsPerAck = perAck(serviceBefore, target.cpuSeconds());
  const databaseCpuMsPerAck = perAck(databaseBefore, database.serverCpuSeconds());
  if (spec.kind !== 'inbox') return { load: result, serviceCpuMsPerAck, databaseCpuMsPerAck, processing: null };
  const drained = await drain(database.store, settings.drainTimeoutSec * 1000);
  if (!drained) console.warn(`  ${spec.name}: processing or the outbox not finished ${settings.drainTimeoutSec}s after the load ended`);
  return { load: result, serviceCpuMsPerAck, databaseCpuMsPerAck, processing: await processingStats(database.store, result.startedAt, result.finishedAt, drained ? Date.now() : null) };
}

/** Valid deliveries at `rate` alone, then again while a second process sends forged ones at saturation. */
async function forgedFlood(settings: BenchSettings, url: string, rate: number): Promise<ForgedFlood> {
  const quiet = await load(settings, url, 'paced', settings.pacedDurationSec, rate);
  const [valid, forged] = await Promise.all([load(settings, url, 'paced', settings.pacedDurationSec, rate), load(settings, url, 'saturate', settings.pacedDurationSec, undefined, true)]);
  const perSec = Math.round(forged.requests / ((forged.finishedAt - forged.startedAt) / 1000));
  console.log(`  forged flood: valid p99 ${valid.latencyMs.p99} ms (alone ${quiet.latencyMs.p99} ms), ${valid.non2xx + valid.errors} valid refused; ${perSec} forged/s, ${forged.acks} accepted`);
  return { quiet, valid, forged };
}

function describeStep(spec: TargetSpec, step: Step): string {
  const { load: l, processing: p } = step;
  const latency = `p50 ${l.latencyMs.p50} / p99 ${l.latencyMs.p99} / p99.9 ${l.latencyMs.p99_9} ms`;
  const settled = p?.settledAfterMs == null ? '' : `, all done ${(p.settledAfterMs / 1000).toFixed(1)} s after the load`;
  const processing = p ? `, processed ${p.processedPerSec}/s (keep-up ${p.keepUp}), lag p50 ${p.lagMs.p50} / p99 ${p.lagMs.p99} ms${settled}` : '';
  return `${Math.round(l.acksPerSec)} acks/s, ${latency}, non-2xx ${l.non2xx + l.errors}, service CPU ${step.serviceCpuMsPerAck} ms/ack, database CPU ${step.databaseCpuMsPerAck ?? '—'} ms/ack${processing}${l.poolWrapped && !spec.noDatabase ? ' [pool wrapped: raise --max-rate]' : ''}`;
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
  const database = await createBenchDatabase(spec.store, settings.mysqlUrl, workDir);
  return holding(database.drop, async () => {
    // One file per thread (the tsx loader runs in a thread of its own); the largest is the main thread.
    const profile = settings.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${join(settings.profileDir, `${spec.name}-${repetition}`)}`] : [];
    const target = await startTarget(spec, spec.store === 'mysql' ? route(database.url) : database.url, logDir(settings), { nodeArgs: profile, env: settings.serviceEnv });
    return holding(target.stop, async () => {
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
    });
  });
}

/**
 * The same saturation load against a table that already holds `rows` events, for each size in turn,
 * after the empty table in the same database: each ratio then compares table sizes at one point of
 * the run, not a full table late in a long run against an empty one at its start.
 */
async function runGrowth(settings: BenchSettings, workDir: string, route: Route): Promise<GrowthRun[]> {
  const runs: GrowthRun[] = [];
  const database = await createBenchDatabase('mysql', settings.mysqlUrl, workDir);
  await holding(database.drop, async () => {
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
        await holding(target.stop, async () => {
          // Warmed up like the empty-table runs, so the ratio compares table sizes, not a cold start.
          if (settings.warmupSec > 0) await measuredStep(settings, spec, database, target, 'saturate', settings.warmupSec);
          const step = await measuredStep(settings, spec, database, target, 'saturate', settings.durationSec);
          console.log(`  ${name} with ${rows.toLocaleString('en')} rows: ${describeStep(spec, step)}`);
          runs.push({ rows, target: name, step, peakRssMb: target.peakRssMb() });
        });
      }
    }
  });
  return runs;
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
  const proxy = settings.dbLatencyMs > 0 ? await startLatencyProxy(settings.mysqlUrl, settings.dbLatencyMs) : null;
  const route: Route = proxy ? (url) => proxy.route(url) : (url) => url;
  try {
    for (let repetition = 1; repetition <= settings.repeat; repetition++) {
      console.log(`repetition ${repetition} of ${settings.repeat}`);
      // Interleaved, so slow minutes on the shared machine spread over every target alike.
      for (const name of settings.targets) runs.push(await runTarget(settings, TARGETS[name]!, repetition, workDir, route));
    }
    const growth = settings.growth.length > 0 ? await runGrowth(settings, workDir, route) : [];
    const results: BenchResults = {
      startedAt,
      finishedAt: new Date().toISOString(),
      command: ['npm run bench', ...(settings.argv.length > 0 ? ['--', ...settings.argv] : [])].join(' '),
      machine: await describeMachine(settings.mysqlUrl, loadAtStart),
      settings: { ...settings, out: undefined, profileDir: undefined },
      runs,
      growth,
      summary: summarise(settings, runs, growth),
    };
    writeReport(settings.out, results);
    if (settings.profileDir) writeFlameGraphs(settings.profileDir);
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
  if (settings.profileDir) console.log(`CPU profiles and their flame graphs (.svg): ${settings.profileDir}`);
  for (const line of results.summary.checks) console.log(`${line.met ? 'MET    ' : 'NOT MET'} ${line.target}: ${line.measured}`);
}
