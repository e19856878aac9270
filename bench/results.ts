import type { BacklogRun } from './backlog.js';
import type { CapacityTrial } from './capacity.js';
import type { ProcessingStats } from './database.js';
import type { HostPressure } from './host-pressure.js';
import type { LoadResult } from './load-generator.js';
import type { DatabaseCalls } from './server-status.js';
import type { BenchSettings } from './settings.js';

/** Medians over repetitions of a lag's p50 and p99; null when nothing was processed. */
export type LagSummary = { p50: number | null; p99: number | null } | null;

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

/**
 * A bench run as results.json holds it: what it measured (its steps, per target and repetition) and
 * what it makes of them (the medians and ratios of its summary, and which targets it met).
 */
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
