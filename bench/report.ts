import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { join } from 'node:path';
import { createConnection } from 'mysql2/promise';
import pg from 'pg';
import type { BacklogRun } from './backlog.js';
import { CAPACITY_LIMITS, type CapacityTrial } from './capacity.js';
import { latencyChart } from './chart.js';
import type { ProcessingStats } from './database.js';
import type { HostPressure } from './host-pressure.js';
import type { DatabaseCalls } from './server-status.js';
import type { LoadResult } from './load-generator.js';
import type { BenchSettings } from './settings.js';
import { median, round, type Percentiles } from './stats.js';
import { inProcess, peerOf, peerOn, TARGETS } from './targets.js';

/** Medians over repetitions of a lag's p50 and p99; null when nothing was processed. */
type LagSummary = { p50: number | null; p99: number | null } | null;

export interface Step {
  load: LoadResult;
  /** CPU of the service process during the load, per acknowledgement (ms). */
  serviceCpuMsPerAck: number | null;
  /** CPU of the database server during the load, per acknowledgement (ms); null when it is not on this machine. */
  databaseCpuMsPerAck: number | null;
  /**
   * What the database server was asked during the load, per acknowledgement (processing done in the
   * same window included); null for a target without a database server.
   */
  databaseCalls: DatabaseCalls | null;
  /** Null for the baseline, which does not process. */
  processing: ProcessingStats | null;
  /**
   * Seconds the workers held processing back for a busy request thread, from the load's start to the
   * end of the drain (webhook_inbox_workers_yield_seconds_total); null for targets that do not report it.
   */
  workersYieldSec: number | null;
  /** The host's CPU and I/O stalls while the load ran; null where the kernel does not report them. */
  hostPressure: HostPressure | null;
}

export interface TargetRun {
  target: string;
  repetition: number;
  paced: Step[];
  /** A fixed-rate step as long as the saturation run, where processing must keep up. */
  sustained: Step | null;
  saturation: Step;
  /** Valid deliveries at a fixed rate, alone and then while forged ones come at saturation. */
  flood: ForgedFlood | null;
  peakRssMb: number;
}

export interface ForgedFlood {
  quiet: LoadResult;
  valid: LoadResult;
  forged: LoadResult;
}

/** One capacity search (bench/capacity.ts): its steps and the highest rate that passed. */
export interface CapacityRun {
  target: string;
  repetition: number;
  trials: CapacityTrial[];
  capacity: number;
}

export interface GrowthRun {
  rows: number;
  target: string;
  step: Step;
  peakRssMb: number;
}

export interface TargetSummary {
  target: string;
  label: string;
  acksPerSec: number;
  /** Median over repetitions of acks/s divided by the acks/s of the baseline on the same server (peerOf) in the same repetition. */
  ackRatio: number | null;
  ackRatios: number[];
  latencyMs: { p50: number | null; p99: number | null; p99_9: number | null };
  non2xx: number;
  serviceCpuMsPerAck: number | null;
  databaseCpuMsPerAck: number | null;
  processedPerSec: number | null;
  keepUp: number | null;
  lagMs: LagSummary;
  /** Seconds from the end of the load until every event and outbox effect was done (see ProcessingStats). */
  settledAfterSec: number | null;
  sustained: {
    rate: number;
    acksPerSec: number;
    ackP99Ms: number | null;
    processedPerSec: number | null;
    keepUp: number | null;
    lagMs: LagSummary;
    /** lagMs of a payment's first, second, and third and later events (see ProcessingStats). */
    lagByPaymentRankMs: LagSummary[];
    settledAfterSec: number | null;
  } | null;
  peakRssMb: number;
  paced: Array<{ rate: number; acksPerSec: number; p50: number | null; p99: number | null; p99_9: number | null }>;
  flood: {
    rate: number;
    quietP99Ms: number | null;
    floodP50Ms: number | null;
    floodP99Ms: number | null;
    /** Valid deliveries that got no 2xx during the flood. */
    validRefused: number;
    forgedPerSec: number;
    /** Forged deliveries that got a 2xx: must be 0. */
    forgedAccepted: number;
  } | null;
}

export interface Check {
  target: string;
  met: boolean | null;
  measured: string;
}

export interface Summary {
  targets: TargetSummary[];
  growth: Array<{ rows: number; target: string; acksPerSec: number; ratioToEmpty: number | null; latencyP99Ms: number | null }>;
  /** One per database server the backlog step ran on. */
  backlog: BacklogSummary[];
  /** ratioToNaive: against the naive handler on the same server (peerOf). */
  capacity: Array<{ target: string; label: string; capacity: number; capacities: number[]; ratioToNaive: number | null }>;
  checks: Check[];
}

/** Medians over repetitions of the backlog step (bench/backlog.ts), per processed event. */
export interface BacklogSummary {
  store: BacklogRun['store'];
  events: number;
  eventsPerSec: number | null;
  serviceCpuMsPerEvent: number | null;
  databaseCpuMsPerEvent: number | null;
  /**
   * (service + database CPU per processed event) / (the same server's baseline's service + database
   * CPU per acknowledgement at saturation). On SQLite the worker's CPU alone, the database running
   * inside it, against MariaDB's baseline.
   */
  cpuRatioToBaselineAck: number | null;
  statementsPerEvent: number | null;
  rowWritesPerEvent: number | null;
  rowReadsPerEvent: number | null;
  commitsPerEvent: number | null;
  /** Each server counter that moved, per event (median). */
  perEvent: Record<string, number>;
  /** The worker's statements by shape, per event, from the first repetition (shapes are the same in each). */
  statements: BacklogRun['statements'];
}

export interface BenchResults {
  startedAt: string;
  finishedAt: string;
  command: string;
  machine: Record<string, string | number>;
  settings: Omit<BenchSettings, 'out' | 'profileDir'> & { out?: undefined; profileDir?: undefined };
  runs: TargetRun[];
  growth: GrowthRun[];
  backlog: BacklogRun[];
  capacity: CapacityRun[];
  summary: Summary;
}

/** The 1-minute load average, a sign of how much else ran on the machine during the bench. */
export function loadAverage(): number {
  return Math.round(loadavg()[0]! * 10) / 10;
}

export async function describeMachine(settings: Pick<BenchSettings, 'mysqlUrl' | 'postgresUrl' | 'targets'>, loadAtStart: number): Promise<Record<string, string | number>> {
  const machine: Record<string, string | number> = {
    loadAverage: `${loadAtStart} at start, ${loadAverage()} at end (1-minute)`,
    cpu: `${cpus().length} x ${cpus()[0]?.model ?? 'unknown'}`,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: process.version,
  };
  const connection = await createConnection({ uri: settings.mysqlUrl });
  try {
    const [rows] = await connection.query('SELECT VERSION() AS version, @@innodb_flush_log_at_trx_commit AS flush, @@innodb_buffer_pool_size AS pool');
    const row = (rows as Array<{ version: string; flush: number; pool: number }>)[0]!;
    machine.database = `MariaDB/MySQL ${row.version}, innodb_flush_log_at_trx_commit=${row.flush}, buffer pool ${Math.round(row.pool / 2 ** 20)} MB`;
  } finally {
    await connection.end();
  }
  if (settings.targets.some((name) => TARGETS[name]!.store === 'postgres')) {
    const client = new pg.Client({ connectionString: `${settings.postgresUrl.replace(/\/$/, '')}/postgres` });
    await client.connect();
    try {
      const { rows } = await client.query<Record<string, string>>(
        `select current_setting('server_version') as version, current_setting('synchronous_commit') as sync, current_setting('shared_buffers') as buffers`,
      );
      const row = rows[0]!;
      machine.postgres = `PostgreSQL ${row.version}, synchronous_commit=${row.sync}, shared_buffers ${row.buffers}`;
    } finally {
      await client.end();
    }
  }
  return machine;
}

const nullableMedian = (values: Array<number | null | undefined>) => {
  const present = values.filter((v): v is number => typeof v === 'number');
  return present.length === 0 ? null : round(median(present));
};

const processingOf = (steps: Step[]) => steps.map((s) => s.processing).filter((p): p is ProcessingStats => p !== null);
const lagOf = (lags: Percentiles[]): LagSummary => (lags.length === 0 ? null : { p50: nullableMedian(lags.map((l) => l.p50)), p99: nullableMedian(lags.map((l) => l.p99)) });
const settledOf = (processing: ProcessingStats[]) => nullableMedian(processing.map((p) => (p.settledAfterMs === null ? null : p.settledAfterMs / 1000)));

export function summarise(settings: BenchSettings, runs: TargetRun[], growth: GrowthRun[], backlog: BacklogRun[], capacity: CapacityRun[]): Summary {
  const targets = settings.targets.map((name): TargetSummary => {
    const own = runs.filter((r) => r.target === name);
    const saturations = own.map((r) => r.saturation);
    const baselineName = peerOf(name, 'baseline');
    const ackRatios =
      name === baselineName
        ? []
        : own.flatMap((r) => {
            const baseline = runs.find((b) => b.target === baselineName && b.repetition === r.repetition);
            return baseline ? [round(r.saturation.load.acksPerSec / baseline.saturation.load.acksPerSec, 3)] : [];
          });
    const processing = processingOf(saturations);
    const sustainedSteps = own.map((r) => r.sustained).filter((s): s is Step => s !== null);
    const sustainedProcessing = processingOf(sustainedSteps);
    const floods = own.map((r) => r.flood).filter((f): f is ForgedFlood => f !== null);
    return {
      target: name,
      label: TARGETS[name]!.label,
      acksPerSec: round(median(saturations.map((s) => s.load.acksPerSec)), 0),
      ackRatio: ackRatios.length > 0 ? round(median(ackRatios), 3) : null,
      ackRatios,
      latencyMs: {
        p50: nullableMedian(saturations.map((s) => s.load.latencyMs.p50)),
        p99: nullableMedian(saturations.map((s) => s.load.latencyMs.p99)),
        p99_9: nullableMedian(saturations.map((s) => s.load.latencyMs.p99_9)),
      },
      non2xx: own.flatMap((r) => [...r.paced, ...(r.sustained ? [r.sustained] : []), r.saturation]).reduce((sum, s) => sum + s.load.non2xx + s.load.errors, 0),
      serviceCpuMsPerAck: nullableMedian(saturations.map((s) => s.serviceCpuMsPerAck)),
      databaseCpuMsPerAck: nullableMedian(saturations.map((s) => s.databaseCpuMsPerAck)),
      processedPerSec: nullableMedian(processing.map((p) => p.processedPerSec)),
      keepUp: nullableMedian(processing.map((p) => p.keepUp)),
      lagMs: lagOf(processing.map((p) => p.lagMs)),
      settledAfterSec: settledOf(processing),
      sustained:
        settings.sustainedRate === null || sustainedSteps.length === 0
          ? null
          : {
              rate: settings.sustainedRate,
              acksPerSec: round(median(sustainedSteps.map((s) => s.load.acksPerSec)), 0),
              ackP99Ms: nullableMedian(sustainedSteps.map((s) => s.load.latencyMs.p99)),
              processedPerSec: nullableMedian(sustainedProcessing.map((p) => p.processedPerSec)),
              keepUp: nullableMedian(sustainedProcessing.map((p) => p.keepUp)),
              lagMs: lagOf(sustainedProcessing.map((p) => p.lagMs)),
              lagByPaymentRankMs: [0, 1, 2].map((rank) => lagOf(sustainedProcessing.map((p) => p.lagByPaymentRankMs[rank]!))),
              settledAfterSec: settledOf(sustainedProcessing),
            },
      peakRssMb: Math.max(...own.map((r) => r.peakRssMb)),
      paced: settings.rates.map((rate, index) => {
        const steps = own.map((r) => r.paced[index]!.load);
        return {
          rate,
          acksPerSec: round(median(steps.map((s) => s.acksPerSec)), 0),
          p50: nullableMedian(steps.map((s) => s.latencyMs.p50)),
          p99: nullableMedian(steps.map((s) => s.latencyMs.p99)),
          p99_9: nullableMedian(steps.map((s) => s.latencyMs.p99_9)),
        };
      }),
      flood:
        settings.floodRate === null || floods.length === 0
          ? null
          : {
              rate: settings.floodRate,
              quietP99Ms: nullableMedian(floods.map((f) => f.quiet.latencyMs.p99)),
              floodP50Ms: nullableMedian(floods.map((f) => f.valid.latencyMs.p50)),
              floodP99Ms: nullableMedian(floods.map((f) => f.valid.latencyMs.p99)),
              validRefused: floods.reduce((sum, f) => sum + f.valid.non2xx + f.valid.errors, 0),
              forgedPerSec: round(median(floods.map((f) => f.forged.requests / ((f.forged.finishedAt - f.forged.startedAt) / 1000))), 0),
              forgedAccepted: floods.reduce((sum, f) => sum + f.forged.acks, 0),
            },
    };
  });
  const growthSummary = growth.map((g) => {
    const empty = growth.find((e) => e.rows === 0 && e.target === g.target)?.step.load.acksPerSec;
    return {
      rows: g.rows,
      target: g.target,
      acksPerSec: round(g.step.load.acksPerSec, 0),
      ratioToEmpty: empty ? round(g.step.load.acksPerSec / empty, 3) : null,
      latencyP99Ms: g.step.load.latencyMs.p99,
    };
  });
  const backlogSummary = [...new Set(backlog.map((b) => b.store))].map((store) =>
    summariseBacklog(
      backlog.filter((b) => b.store === store),
      targets.find((t) => t.target === peerOn(store, 'baseline')),
    ),
  );
  const capacitySummary = settings.capacityTargets.map((name) => {
    const own = capacity.filter((c) => c.target === name);
    const naiveName = peerOf(name, 'naive');
    // Per repetition, against the capacity of the naive handler on the same server in the same repetition.
    const ratios = own.flatMap((c) => {
      const peer = capacity.find((n) => n.target === naiveName && n.repetition === c.repetition);
      return peer && peer.capacity > 0 ? [c.capacity / peer.capacity] : [];
    });
    return {
      target: name,
      label: TARGETS[name]!.label,
      capacity: own.length === 0 ? 0 : round(median(own.map((c) => c.capacity)), 0),
      capacities: own.map((c) => c.capacity),
      ratioToNaive: name === naiveName || ratios.length === 0 ? null : round(median(ratios), 3),
    };
  });
  return {
    targets,
    growth: growthSummary,
    backlog: backlogSummary,
    capacity: capacitySummary,
    checks: checks(settings, targets, growthSummary, backlogSummary, capacitySummary),
  };
}

function summariseBacklog(backlog: BacklogRun[], baseline: TargetSummary | undefined): BacklogSummary {
  const of = (pick: (run: BacklogRun) => number | null) => nullableMedian(backlog.map(pick));
  const serviceCpuMsPerEvent = of((b) => b.serviceCpuMsPerEvent);
  const databaseCpuMsPerEvent = of((b) => b.databaseCpuMsPerEvent);
  const baselineService = baseline?.serviceCpuMsPerAck ?? null;
  const baselineDatabase = baseline?.databaseCpuMsPerAck ?? null;
  const perAck = baselineService !== null && baselineDatabase !== null ? baselineService + baselineDatabase : null;
  const perEvent = serviceCpuMsPerEvent !== null && (databaseCpuMsPerEvent !== null || inProcess(backlog[0]!.store)) ? serviceCpuMsPerEvent + (databaseCpuMsPerEvent ?? 0) : null;
  const counters = [...new Set(backlog.flatMap((b) => Object.keys(b.perEvent)))].sort();
  return {
    store: backlog[0]!.store,
    events: round(median(backlog.map((b) => b.events)), 0),
    eventsPerSec: of((b) => b.eventsPerSec),
    serviceCpuMsPerEvent,
    databaseCpuMsPerEvent,
    cpuRatioToBaselineAck: perAck && perEvent !== null ? round(perEvent / perAck, 2) : null,
    statementsPerEvent: of((b) => b.statementsPerEvent),
    rowWritesPerEvent: of((b) => b.rowWritesPerEvent),
    rowReadsPerEvent: of((b) => b.rowReadsPerEvent),
    commitsPerEvent: of((b) => b.commitsPerEvent),
    perEvent: Object.fromEntries(counters.map((name) => [name, round(median(backlog.map((b) => b.perEvent[name] ?? 0)))])),
    statements: backlog[0]!.statements,
  };
}

function checks(settings: BenchSettings, targets: TargetSummary[], growth: Summary['growth'], backlog: BacklogSummary[], capacity: Summary['capacity']): Check[] {
  const result: Check[] = [];
  // The same targets on each server, each read against that server's baseline and naive handler.
  for (const store of ['mysql', 'postgres'] as const) {
    const on = (name: string) => peerOn(store, name);
    const server = store === 'postgres' ? 'PostgreSQL: ' : '';
    const background = targets.find((t) => t.target === on('background'));
    const baseline = targets.find((t) => t.target === on('baseline'));
    if (background?.ackRatio != null) {
      result.push({
        target: `${server}default-mode ack throughput >= 2x baseline`,
        met: background.ackRatio >= 2,
        measured: `${background.ackRatio}x (${background.acksPerSec} vs ${baseline?.acksPerSec} acks/s)`,
      });
      const lowest = Math.min(...background.ackRatios);
      result.push({
        target: `${server}never below 1x baseline (every repetition)`,
        met: lowest >= 1,
        measured: `lowest ${lowest}x over ${background.ackRatios.length} repetition(s)`,
      });
    }
    const at1000 = (t: TargetSummary | undefined) => t?.paced.find((p) => p.rate === 1000);
    if (at1000(background) && at1000(baseline)) {
      const own = at1000(background)!.p99;
      const floor = at1000(baseline)!.p99;
      result.push({ target: `${server}ack p99 at 1000/s <= baseline p99`, met: own !== null && floor !== null && own <= floor, measured: `${own} ms vs baseline ${floor} ms` });
    }
    const keepsUp = (what: string, keepUp: number | null, processedPerSec: number | null, lag: TargetSummary['lagMs']) => {
      if (keepUp === null || !lag) return;
      result.push({
        target: `${server}processing keeps up, ${what}: processed/s >= 0.95 x new events/s, lag p99 < 1 s`,
        met: keepUp >= 0.95 && lag.p99 !== null && lag.p99 < 1000,
        measured: `keep-up ${keepUp}, ${processedPerSec} processed/s, lag p50 ${lag.p50} / p99 ${lag.p99} ms`,
      });
    };
    const sustained = background?.sustained;
    if (sustained) keepsUp(`${settings.durationSec} s at ${sustained.rate}/s offered`, sustained.keepUp, sustained.processedPerSec, sustained.lagMs);
    if (background) keepsUp(`${settings.durationSec} s saturation run`, background.keepUp, background.processedPerSec, background.lagMs);
    const receiveOnly = targets.find((t) => t.target === on('receive-only'));
    if (receiveOnly?.ackRatio != null) {
      result.push({
        target: `${server}receive-only ack throughput >= 2x baseline`,
        met: receiveOnly.ackRatio >= 2,
        measured: `${receiveOnly.ackRatio}x (${receiveOnly.acksPerSec} acks/s)`,
      });
    }
    const processing = backlog.find((b) => b.store === store);
    if (processing?.cpuRatioToBaselineAck != null) {
      const database = store === 'postgres' ? 'PostgreSQL' : 'MariaDB';
      result.push({
        target: `${server}processing CPU per event (worker + ${database}, backlog step) <= 2x the baseline's CPU per acknowledgement (service + ${database})`,
        met: processing.cpuRatioToBaselineAck <= 2,
        measured: `${processing.cpuRatioToBaselineAck}x (${processing.serviceCpuMsPerEvent} + ${processing.databaseCpuMsPerEvent} ms per event)`,
      });
    }
    const ours = capacity.find((c) => c.target === on('background'));
    if (ours?.ratioToNaive != null) {
      const naive = capacity.find((c) => c.target === on('naive'))!;
      result.push({
        target: `${server}end-to-end capacity of the default mode >= 2x the naive handler's`,
        met: ours.ratioToNaive >= 2,
        measured: `${ours.ratioToNaive}x (${ours.capacity}/s vs ${naive.capacity}/s)`,
      });
    }
  }
  const largest = growth.filter((g) => g.target === 'background').at(-1);
  if (largest?.ratioToEmpty != null) {
    result.push({
      target: `growth: ${largest.rows.toLocaleString('en')} rows >= 0.8x empty-table throughput`,
      met: largest.ratioToEmpty >= 0.8,
      measured: `${largest.ratioToEmpty}x (${largest.acksPerSec} acks/s)`,
    });
  }
  const flood = targets.find((t) => t.target === 'background')?.flood;
  if (flood) {
    result.push({
      target: `a forged flood does not starve valid deliveries (${flood.rate}/s valid during the flood): every valid one acknowledged, no forged one`,
      met: flood.validRefused === 0 && flood.forgedAccepted === 0,
      measured: `valid p99 ${flood.floodP99Ms} ms during ${flood.forgedPerSec} forged/s (${flood.quietP99Ms} ms without), ${flood.validRefused} valid refused, ${flood.forgedAccepted} forged accepted`,
    });
  }
  const services = targets.filter((t) => TARGETS[t.target]!.kind === 'inbox' || TARGETS[t.target]!.kind === 'receiver');
  if (services.length > 0) {
    const peak = Math.max(...services.map((t) => t.peakRssMb));
    result.push({ target: 'peak RSS of one service process <= 250 MB', met: peak <= 250, measured: `${peak} MB` });
  }
  return result;
}

const cell = (value: number | null | undefined, unit = '') => (value === null || value === undefined ? '—' : `${value}${unit}`);
/** A lag summary as a table cell: "p50 / p99", or — when nothing was processed. */
const lagCell = (lag: LagSummary) => (lag ? `${cell(lag.p50)} / ${cell(lag.p99)}` : '—');

/** A run with `--rates none` has no fixed-rate steps: no latency section, no chart. */
const hasFixedRateSteps = (settings: BenchResults['settings']) => settings.rates.length > 0;

/** The fixed-rate steps' percentiles beside their chart. */
function latencySection({ settings, summary }: BenchResults): string[] {
  if (!hasFixedRateSteps(settings)) return [];
  return [
    '## Latency against offered load (open loop, measured from the moment each request was due)',
    '',
    '![latency percentiles against offered load](latency.svg)',
    '',
    `| target | ${settings.rates.map((r) => `${r}/s p50 / p99 / p99.9`).join(' | ')} |`,
    `|---|${settings.rates.map(() => '---').join('|')}|`,
    ...summary.targets.map((t) => `| ${t.label} | ${t.paced.map((p) => `${cell(p.p50)} / ${cell(p.p99)} / ${cell(p.p99_9)}`).join(' | ')} |`),
  ];
}

export function reportMarkdown(results: BenchResults): string {
  const { summary, machine, settings } = results;
  const lines = [
    '# webhook-inbox benchmark',
    '',
    `${results.startedAt} — \`${results.command}\` — ${settings.repeat} repetition(s), medians; saturation runs ${settings.durationSec} s with ${settings.connections} connections; fixed-rate steps ${settings.pacedDurationSec} s.`,
    '',
    `Machine: ${machine.cpu}, ${machine.memoryGb} GB, Linux ${machine.kernel}, Node ${machine.node}; ${machine.database}${machine.postgres ? `; ${machine.postgres}` : ''}. The load generator runs on the same cores. Load average ${machine.loadAverage}.`,
    ...(settings.dbLatencyMs > 0
      ? [
          '',
          `The targets reached MariaDB through a proxy that delayed every packet ${settings.dbLatencyMs} ms each way (a round trip ${2 * settings.dbLatencyMs} ms longer): a database across a network.`,
        ]
      : []),
    '',
    '## Saturation (closed loop)',
    '',
    '| target | acks/s | x baseline | ack p50 / p99 / p99.9 (ms) | non-2xx | service CPU per ack | database CPU per ack | processed/s | keep-up | lag p50 / p99 (ms) | all done after (s) | peak RSS |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...summary.targets.map(
      (t) =>
        `| ${t.label} | ${t.acksPerSec} | ${cell(t.ackRatio, 'x')} | ${cell(t.latencyMs.p50)} / ${cell(t.latencyMs.p99)} / ${cell(t.latencyMs.p99_9)} | ${t.non2xx} | ${cell(t.serviceCpuMsPerAck, ' ms')} | ${cell(t.databaseCpuMsPerAck, ' ms')} | ${cell(t.processedPerSec)} | ${cell(t.keepUp)} | ${lagCell(t.lagMs)} | ${cell(t.settledAfterSec)} | ${t.peakRssMb} MB |`,
    ),
    '',
    "acks/s counts every 2xx (new events and duplicates); processed/s counts distinct events processed during the run; keep-up is processed/s over distinct new events/s. All done after: seconds from the end of the load until every event was processed and every outbox effect dispatched (the work the run left behind). Service CPU per ack: CPU time of the service process during the run (acknowledging and, in background mode, processing) divided by its acks; database CPU per ack the same for the database server (MariaDB; for the PostgreSQL rows the backends connected to the target's database; — when it runs elsewhere, or for SQLite, which runs inside the service). x baseline: against the baseline on the same database server in the same repetition (PostgreSQL rows against the PostgreSQL baseline; SQLite against MariaDB). non-2xx counts every measured step.",
    '',
    ...sustainedSection(results),
    ...latencySection(results),
  ];
  const floods = summary.targets.filter((t) => t.flood);
  if (floods.length > 0) {
    lines.push(
      '',
      `## Forged flood (valid deliveries at ${settings.floodRate}/s for ${settings.pacedDurationSec} s, alone and then with forged ones at saturation from a second process)`,
      '',
      '| target | valid p99 alone (ms) | valid p50 / p99 during the flood (ms) | valid refused | forged/s | forged accepted |',
      '|---|---|---|---|---|---|',
      ...floods.map((t) => {
        const f = t.flood!;
        return `| ${t.label} | ${cell(f.quietP99Ms)} | ${cell(f.floodP50Ms)} / ${cell(f.floodP99Ms)} | ${f.validRefused} | ${f.forgedPerSec} | ${f.forgedAccepted} |`;
      }),
      '',
      'Forged deliveries are real ones with one byte added to the body: well-formed, full size, every signature wrong, so each costs the receiver a whole HMAC and nothing more (no database access before the signature is checked).',
    );
  }
  if (summary.growth.length > 0) {
    lines.push(
      '',
      '## Growth (same saturation load, table pre-filled)',
      '',
      'Each target runs on the empty table first, then on the same table filled to each size, so the ratios compare table sizes at one point of the run.',
      '',
      '| rows already in webhook_events | target | acks/s | x empty table | ack p99 (ms) |',
      '|---|---|---|---|---|',
    );
    for (const g of summary.growth) lines.push(`| ${g.rows.toLocaleString('en')} | ${g.target} | ${g.acksPerSec} | ${cell(g.ratioToEmpty, 'x')} | ${cell(g.latencyP99Ms)} |`);
  }
  lines.push(...capacitySection(results), ...backlogSection(results));
  lines.push('', '## Targets', '', '| target | met | measured |', '|---|---|---|');
  for (const c of summary.checks) lines.push(`| ${c.target} | ${c.met === null ? '—' : c.met ? 'yes' : 'no'} | ${c.measured} |`);
  lines.push('');
  return lines.join('\n');
}

function capacitySection(results: BenchResults): string[] {
  const { capacity } = results.summary;
  if (capacity.length === 0) return [];
  const steps = (name: string) =>
    results.capacity
      .filter((c) => c.target === name)
      .map((c) =>
        c.trials
          .map(
            (t) =>
              `${t.rate}${t.passed ? '' : '✗'} (${t.tries > 1 ? `${t.triesPassed}/${t.tries} passed, medians: ` : ''}p99 ${cell(t.ackP99Ms)}, keep-up ${cell(t.keepUp)}, lag p99 ${cell(t.lagP99Ms)}${t.workersYieldSec ? `, workers yielded ${t.workersYieldSec} s` : ''})`,
          )
          .join(', '),
      )
      .join('; ');
  return [
    '',
    `## End-to-end capacity (fixed-rate steps of ${results.settings.capacityDurationSec} s: ack p99 <= ${CAPACITY_LIMITS.ackP99Ms} ms, keep-up >= ${CAPACITY_LIMITS.keepUp}, lag p99 < ${CAPACITY_LIMITS.lagP99Ms} ms, every delivery a 2xx)`,
    '',
    '| target | capacity (deliveries/s offered) | x naive handler | steps, per repetition (✗ failed) |',
    '|---|---|---|---|',
    ...capacity.map((c) => `| ${c.label} | ${c.capacity} | ${cell(c.ratioToNaive, 'x')} | ${steps(c.target)} |`),
    '',
    `From ${results.settings.capacityStart}/s, doubled until a rate fails, then ${results.settings.capacityRefine} rate(s) halving the gap; each rate tried up to ${results.settings.capacityTries} time(s), passing when most tries pass; the targets' searches take turns step by step, so each meets the same minutes of the host; capacity is the highest rate that passed (median over repetitions).`,
  ];
}

/** Statement shapes listed in the report; results.json keeps them all. */
const STATEMENT_ROWS = 25;

const perEventSum = (statements: BacklogRun['statements'], value: (s: BacklogRun['statements'][number]) => number) =>
  round(
    statements.reduce((sum, s) => sum + value(s), 0),
    3,
  );

function backlogSection(results: BenchResults): string[] {
  return results.summary.backlog.flatMap((b) => {
    const database = { mysql: 'MariaDB', postgres: 'PostgreSQL', sqlite: 'SQLite' }[b.store];
    const counters = Object.entries(b.perEvent).filter(([name]) => name !== 'Questions');
    const source = {
      postgres:
        "Per event, from PostgreSQL's pg_stat_database for the bench's database (statements from pg_stat_statements when installed, otherwise the worker's own from the statement probe)",
      mysql: "Per event, from MariaDB's SHOW GLOBAL STATUS over the drain (server-wide: other clients of the server count too)",
      sqlite: 'SQLite runs inside the worker: its CPU is in the worker CPU, the ratio is to MariaDB’s baseline, and there are no server counters',
    }[b.store];
    const withinWorker = inProcess(b.store);
    return [
      '',
      `## Backlog on ${database}: processing alone (${b.events} events recorded with \`serve --no-workers\`, then one \`worker\` alone)`,
      '',
      `| events/s | worker CPU per event | ${database} CPU per event | x baseline CPU per ack | statements | row writes | row reads | commits |`,
      '|---|---|---|---|---|---|---|---|',
      `| ${cell(b.eventsPerSec)} | ${cell(b.serviceCpuMsPerEvent, ' ms')} | ${withinWorker ? 'in the worker' : cell(b.databaseCpuMsPerEvent, ' ms')} | ${cell(b.cpuRatioToBaselineAck, 'x')} | ${cell(b.statementsPerEvent)} | ${cell(b.rowWritesPerEvent)} | ${cell(b.rowReadsPerEvent)} | ${cell(b.commitsPerEvent)} |`,
      '',
      `${source}${counters.length === 0 ? '' : `: ${counters.map(([name, value]) => `${name} ${value}`).join(', ')}`}.`,
      '',
      `The worker's statements by shape (bench/statement-probe.mjs; the bench's own drain polls are not among them), per processed event: ${STATEMENT_ROWS} most frequent of ${b.statements.length} shapes, ${perEventSum(b.statements, (s) => s.perEvent)} statements per event in all, ${perEventSum(b.statements, (s) => s.unpreparedPerEvent)} of them unprepared (parsed and planned for that run alone). Texts: how many distinct statement texts the shape came in.`,
      '',
      `| statement | per event | unprepared per event | texts | rows changed per event | ${withinWorker ? 'execution' : 'round-trip'} ms per event | errors |`,
      '|---|---|---|---|---|---|---|',
      ...b.statements
        .slice(0, STATEMENT_ROWS)
        .map(
          (s) =>
            `| \`${s.shape.replaceAll('|', '\\|').replaceAll('`', "'")}\` | ${s.perEvent} | ${s.unpreparedPerEvent} | ${s.texts} | ${s.rowsChangedPerEvent} | ${s.msPerEvent} | ${s.errors} |`,
        ),
    ];
  });
}

function sustainedSection(results: BenchResults): string[] {
  const rows = results.summary.targets.filter((t) => t.sustained);
  if (rows.length === 0) return [];
  return [
    `## Sustained load (${results.settings.sustainedRate}/s offered for ${results.settings.durationSec} s, open loop)`,
    '',
    "| target | acks/s | ack p99 (ms) | processed/s | keep-up | lag p50 / p99 (ms) | lag p50 / p99 of a payment's 1st; 2nd; 3rd+ event (ms) | all done after (s) |",
    '|---|---|---|---|---|---|---|---|',
    ...rows.map((t) => {
      const s = t.sustained!;
      return `| ${t.label} | ${s.acksPerSec} | ${cell(s.ackP99Ms)} | ${cell(s.processedPerSec)} | ${cell(s.keepUp)} | ${lagCell(s.lagMs)} | ${s.lagMs ? s.lagByPaymentRankMs.map(lagCell).join('; ') : '—'} | ${cell(s.settledAfterSec)} |`;
    }),
    '',
    "One event of a payment is processed at a time, so a payment's later events wait for its earlier ones: their lag is the first event's and then some.",
    '',
  ];
}

export function writeReport(directory: string, results: BenchResults): void {
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(directory, 'report.md'), reportMarkdown(results));
  const chart = join(directory, 'latency.svg');
  // A chart left from an earlier run would sit beside a report that has no fixed-rate steps.
  if (!hasFixedRateSteps(results.settings)) {
    rmSync(chart, { force: true });
    return;
  }
  const series = results.summary.targets.map((t) => ({ label: t.label, points: t.paced }));
  writeFileSync(chart, latencyChart(series, `Ack latency against offered load (${results.machine.cpu})`));
}
