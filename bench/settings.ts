import { join, resolve } from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { positiveIntegerOption } from '../src/cli/context.js';
import { DEFAULT_SERVERS, type DatabaseServers } from './database.js';
import { TARGETS } from './targets.js';

const ROOT = resolve(import.meta.dirname, '..');

export interface BenchSettings extends DatabaseServers {
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
  /** One-way delay between the targets and MariaDB, through a proxy (a database across a network); 0 for none. */
  dbLatencyMs: number;
  /** Extra environment for the webhook-inbox targets (e.g. WORKER_CONCURRENCY=8), for experiments. */
  serviceEnv: Record<string, string>;
  /** Distinct events of the backlog step (recorded without workers, then worked off by one worker alone), or 0 to skip it. */
  backlogEvents: number;
  /** Targets whose end-to-end capacity is searched (bench/capacity.ts), in this order, each repetition. */
  capacityTargets: string[];
  /** Seconds of each fixed-rate step of the capacity search. */
  capacityDurationSec: number;
  capacityStart: number;
  capacityRefine: number;
  /** Steps allowed at each rate of the capacity search; a rate passes when most of them pass. */
  capacityTries: number;
  out: string;
  profileDir: string | null;
}

const list = (parse: (item: string) => number | string) => (value: string) =>
  value === 'none'
    ? []
    : value.split(',').map((item) => {
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
const count = numberWhere((n) => Number.isInteger(n) && n >= 0, 'a whole number >= 0');
const targetName = (name: string) => {
  if (!(name in TARGETS)) throw new InvalidArgumentError(`unknown target "${name}" (${Object.keys(TARGETS).join(', ')})`);
  return name;
};

const environmentPair = (pair: string, previous: Record<string, string>) => {
  const [key, ...value] = pair.split('=');
  if (!key || value.length === 0) throw new InvalidArgumentError(`takes KEY=VALUE (got "${pair}")`);
  return { ...previous, [key]: value.join('=') };
};

const CAPACITY_TARGETS = ['background', 'naive', 'pg-background', 'pg-naive'];

export function parseSettings(argv: string[]): BenchSettings {
  const program = new Command()
    .name('npm run bench --')
    .description('Ack throughput, latency, processing lag and growth: webhook-inbox against a minimal baseline, in one run')
    .option('--quick', 'development run, a couple of minutes: short steps, one repetition, no growth run, a short backlog step and capacity search')
    .option('--duration <s>', 'seconds of each saturation run (full: 60, quick: 2)', positive)
    .option('--warmup <s>', 'seconds of unmeasured load before measuring each target, 0 for none (full: 5, quick: 1)', atLeast(0))
    .option('--paced-duration <s>', 'seconds of each fixed-rate step (full: 10, quick: 2)', positive)
    .option('--rates <list>', 'offered loads of the fixed-rate steps, deliveries/s (full: 250,1000,2000,4000; quick: 1000)', list(Number))
    .option('--sustained <rate>', 'offered load of a fixed-rate step as long as --duration, where processing must keep up (full: 1000; quick: none); 0 skips it', atLeast(0))
    .option('--flood <rate>', 'valid deliveries/s sent while forged ones come at saturation (background target; full and quick: 250); 0 skips it', atLeast(0))
    .option('--connections <n>', 'concurrent connections of the load generator', positiveIntegerOption, 64)
    .option('--repeat <n>', 'repetitions; figures are medians (full: 3, quick: 1)', positiveIntegerOption)
    .option('--growth <list>', 'pre-filled rows for growth runs, or none (full: 1000000,5000000; quick: none)', list(Number))
    .option(
      '--targets <list>',
      `targets (${Object.keys(TARGETS).join(', ')}); pg-* run on PostgreSQL, quoted against pg-baseline; full: all, quick: baseline,background,inline,pg-baseline,pg-background`,
      list(targetName),
    )
    .option(
      '--backlog <n>',
      'distinct events of the backlog step: recorded with no workers, then one worker alone is timed working them off (full: 20000, quick: 1000); 0 skips it',
      count,
    )
    .option(
      '--capacity <list>',
      `targets whose end-to-end capacity is searched: the highest offered rate with ack p99 <= 50 ms, keep-up >= 0.95 and lag p99 < 1 s (full and quick: background,naive,pg-background,pg-naive), or none`,
      list(targetName),
    )
    .option('--capacity-duration <s>', 'seconds of each capacity step (full: 60, quick: 3)', positive)
    .option('--capacity-start <rate>', 'first offered rate of the capacity search, doubled until a step fails (full: 250, quick: 250)', positive)
    .option('--capacity-refine <n>', 'steps halving the gap between the highest pass and the lowest failure (full: 3, quick: 1)', count)
    .option('--capacity-tries <n>', 'steps allowed at each capacity rate, which passes when most of them pass; stops once decided (full: 3, quick: 1)', positive)
    .option('--max-rate <n>', 'expected top rate, sizes the pre-signed pool', positive, 8000)
    .option('--drain-timeout <s>', 'how long to wait for processing and the outbox to finish after a step', positive)
    .option('--mysql-url <url>', 'MariaDB/MySQL server (the bench creates and drops its own databases)', DEFAULT_SERVERS.mysqlUrl)
    .option('--postgres-url <url>', 'PostgreSQL server of the pg-* targets (the bench creates and drops its own databases)', DEFAULT_SERVERS.postgresUrl)
    .option(
      '--db-latency <ms>',
      'delay each packet between the targets and MariaDB by this much, each way, through a proxy process: a database across a network (default 0: direct)',
      atLeast(0),
      0,
    )
    .option('--service-env <KEY=VALUE...>', 'extra environment for the webhook-inbox targets, e.g. WORKER_CONCURRENCY=8', environmentPair, {})
    .option('--out <dir>', 'where results.json, report.md and latency.svg go', join(ROOT, 'bench/results'))
    .option('--profile <dir>', "write --cpu-prof profiles of each target process and of the backlog step's worker, one file per thread (summarise with bench/profile-summary.ts)")
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
    targets: pick(o.targets, Object.keys(TARGETS), ['baseline', 'background', 'inline', 'pg-baseline', 'pg-background']),
    maxRate: o.maxRate as number,
    drainTimeoutSec: pick(o.drainTimeout, 120, 20),
    mysqlUrl: o.mysqlUrl as string,
    postgresUrl: o.postgresUrl as string,
    dbLatencyMs: o.dbLatency as number,
    serviceEnv: o.serviceEnv as Record<string, string>,
    backlogEvents: pick(o.backlog, 20_000, 1_000),
    capacityTargets: pick(o.capacity, CAPACITY_TARGETS, CAPACITY_TARGETS),
    capacityDurationSec: pick(o.capacityDuration, 60, 3),
    capacityStart: pick(o.capacityStart, 250, 250),
    capacityRefine: pick(o.capacityRefine, 3, 1),
    capacityTries: pick(o.capacityTries, 3, 1),
    out: resolve(o.out as string),
    profileDir: o.profile ? resolve(o.profile as string) : null,
  };
}
