import type { ProcessingStats } from './database.js';
import type { LoadResult } from './load-generator.js';
import { median, round } from './stats.js';

/**
 * End-to-end capacity: the highest offered rate a target sustains with acknowledgements fast and
 * processing keeping up, found by fixed-rate steps: doubling from a start rate until one fails, then
 * halving the gap between the highest pass and the lowest failure a few times. Each rate may be
 * tried several times and passes when most of its tries do: on a shared machine one step's p99 can
 * be made by a few seconds of the host's stalls, which a second try does not meet at the same place.
 */
export const CAPACITY_LIMITS = { ackP99Ms: 50, keepUp: 0.95, lagP99Ms: 1000 } as const;

export interface CapacityTrial {
  rate: number;
  passed: boolean;
  acksPerSec: number;
  ackP99Ms: number | null;
  keepUp: number | null;
  lagP99Ms: number | null;
  /** Seconds the workers yielded to a busy request thread (see Step); null for a target that does not report it. */
  workersYieldSec: number | null;
  failures: number;
  /** Steps run at this rate, and how many of them passed (the figures above are their medians). */
  tries: number;
  triesPassed: number;
}

export interface CapacitySearch {
  start: number;
  /** Steps of bisection after the first failure. */
  refine: number;
  /** No step above this rate (the load generator's pool and the machine set it). */
  max: number;
}

/** A fixed-rate step passes when every delivery got a 2xx, the ack p99 and the processing lag are within limits, and processing kept up. */
export function trialOf(rate: number, step: { load: LoadResult; processing: ProcessingStats | null; workersYieldSec: number | null }): CapacityTrial {
  const { load, processing, workersYieldSec } = step;
  const failures = load.non2xx + load.errors;
  const ackP99Ms = load.latencyMs.p99;
  const keepUp = processing?.keepUp ?? null;
  const lagP99Ms = processing?.lagMs.p99 ?? null;
  const passed =
    failures === 0 &&
    ackP99Ms !== null &&
    ackP99Ms <= CAPACITY_LIMITS.ackP99Ms &&
    keepUp !== null &&
    keepUp >= CAPACITY_LIMITS.keepUp &&
    lagP99Ms !== null &&
    lagP99Ms < CAPACITY_LIMITS.lagP99Ms;
  return { rate, passed, acksPerSec: Math.round(load.acksPerSec), ackP99Ms, keepUp, lagP99Ms, workersYieldSec, failures, tries: 1, triesPassed: passed ? 1 : 0 };
}

/** Whether `tries` steps at one rate have decided it: a majority of `allowed` passed, or can no longer. */
export function triesDecided(tries: CapacityTrial[], allowed: number): boolean {
  const majority = Math.floor(allowed / 2) + 1;
  const passed = tries.filter((t) => t.passed).length;
  return passed >= majority || tries.length - passed > allowed - majority;
}

/** One rate's verdict from its tries: passed when most did, with the median of each figure and every failure counted. */
export function combineTries(tries: CapacityTrial[]): CapacityTrial {
  // Unlike the report's median over repetitions, a try that produced no figure is not hidden by the others.
  const medianUnlessMissing = (values: Array<number | null>) => (values.some((v) => v === null) ? null : round(median(values as number[]), 3));
  const triesPassed = tries.filter((t) => t.passed).length;
  return {
    rate: tries[0]!.rate,
    passed: triesPassed * 2 > tries.length,
    acksPerSec: Math.round(median(tries.map((t) => t.acksPerSec))),
    ackP99Ms: medianUnlessMissing(tries.map((t) => t.ackP99Ms)),
    keepUp: medianUnlessMissing(tries.map((t) => t.keepUp)),
    lagP99Ms: medianUnlessMissing(tries.map((t) => t.lagP99Ms)),
    workersYieldSec: medianUnlessMissing(tries.map((t) => t.workersYieldSec)),
    failures: tries.reduce((sum, t) => sum + t.failures, 0),
    tries: tries.length,
    triesPassed,
  };
}

/** The next rate to try after `trials`, or null when the search is over. */
export function nextCapacityRate(trials: CapacityTrial[], search: CapacitySearch): number | null {
  if (trials.length === 0) return Math.min(search.start, search.max);
  const firstFailure = trials.findIndex((t) => !t.passed);
  if (firstFailure === -1) {
    const last = trials.at(-1)!.rate;
    return last >= search.max ? null : Math.min(last * 2, search.max);
  }
  if (trials.length - 1 - firstFailure >= search.refine) return null;
  const highestPass = Math.max(0, ...trials.filter((t) => t.passed).map((t) => t.rate));
  const lowestFailure = Math.min(...trials.filter((t) => !t.passed).map((t) => t.rate));
  // Rounded to tens: finer steps are below what one run on a shared machine can tell apart.
  const next = Math.round((highestPass + lowestFailure) / 20) * 10;
  return next <= highestPass || next >= lowestFailure ? null : next;
}

/**
 * One target's search, one step at a time, so that several targets' searches can take turns: the
 * host's slow minutes then fall on every target alike instead of on whichever searched during them.
 */
export class CapacitySearchProgress {
  /** One combined verdict per rate decided so far, in the order tried. */
  readonly trials: CapacityTrial[] = [];
  /** The steps run at the rate being decided. */
  private tries: CapacityTrial[] = [];

  constructor(
    private readonly search: CapacitySearch,
    /** Steps allowed at each rate (see triesDecided). */
    private readonly triesAllowed: number,
  ) {}

  /** The rate of the next step, or null once the search is over. */
  nextRate(): number | null {
    return this.tries[0]?.rate ?? nextCapacityRate(this.trials, this.search);
  }

  /** Which try at its rate the next step is, from 1. */
  nextTry(): number {
    return this.tries.length + 1;
  }

  /** Takes one step's verdict, at the rate nextRate() gave. */
  record(trial: CapacityTrial): void {
    this.tries.push(trial);
    if (!triesDecided(this.tries, this.triesAllowed)) return;
    this.trials.push(combineTries(this.tries));
    this.tries = [];
  }

  capacity(): number {
    return capacityOf(this.trials);
  }
}

/** The highest rate that passed, or 0 when none did. */
export function capacityOf(trials: CapacityTrial[]): number {
  return Math.max(0, ...trials.filter((t) => t.passed).map((t) => t.rate));
}
