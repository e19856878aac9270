import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CapacitySearchProgress, capacityOf, combineTries, trialOf, triesDecided, type CapacityTrial } from '../capacity.js';
import type { ProcessingStats } from '../database.js';
import type { LoadResult } from '../load-generator.js';

const search = { start: 100, refine: 2, max: 8000 };

const step = (rate: number, passed: boolean): CapacityTrial => ({
  rate,
  passed,
  acksPerSec: rate,
  ackP99Ms: 1,
  keepUp: 1,
  lagP99Ms: 1,
  workersYieldSec: null,
  failures: 0,
  tries: 1,
  triesPassed: passed ? 1 : 0,
});

/** Runs the search, one try per rate, against a target that passes every rate up to `limit`. */
function searchUpTo(limit: number, options = search): number[] {
  const progress = new CapacitySearchProgress(options, 1);
  for (let rate = progress.nextRate(); rate !== null; rate = progress.nextRate()) progress.record(step(rate, rate <= limit));
  return progress.trials.map((t) => t.rate);
}

const load = (overrides: Partial<LoadResult> = {}): LoadResult => ({
  mode: 'paced',
  offeredRate: 100,
  startedAt: 0,
  finishedAt: 1000,
  requests: 100,
  acks: 100,
  non2xx: 0,
  errors: 0,
  acksPerSec: 100,
  latencyMs: { count: 100, p50: 5, p99: 20, p99_9: 30, max: 40 },
  secondP99sMs: null,
  sendLateMs: null,
  uniqueEvents: 100,
  duplicatesInPool: 0,
  poolWrapped: false,
  generatorCpuMsPerRequest: 0.02,
  ...overrides,
});
const processing = (keepUp: number, lagP99: number | null): ProcessingStats => ({
  newEvents: 100,
  newPerSec: 100,
  processedPerSec: 100 * keepUp,
  keepUp,
  lagMs: { count: 100, p50: 10, p99: lagP99, p99_9: lagP99, max: lagP99 },
  lagByPaymentRankMs: [
    { count: 0, p50: null, p99: null, p99_9: null, max: null },
    { count: 0, p50: null, p99: null, p99_9: null, max: null },
    { count: 0, p50: null, p99: null, p99_9: null, max: null },
  ],
  unprocessed: 0,
  settledAfterMs: 0,
});

describe('capacity search', () => {
  test('doubles until a step fails, then halves the gap `refine` times', () => {
    assert.deepEqual(searchUpTo(650), [100, 200, 400, 800, 600, 700]);
    assert.equal(capacityOf(searchUpTo(650).map((rate) => ({ rate, passed: rate <= 650 }) as CapacityTrial)), 600);
  });

  test('without refinement it stops at the first failure; a failing start gives 0', () => {
    assert.deepEqual(searchUpTo(250, { ...search, refine: 0 }), [100, 200, 400]);
    assert.deepEqual(searchUpTo(10, { ...search, refine: 1 }), [100, 50]);
    assert.equal(capacityOf([{ rate: 100, passed: false } as CapacityTrial]), 0);
  });

  test('taken one step at a time, it stays at a rate until its tries decide it', () => {
    const progress = new CapacitySearchProgress({ start: 100, refine: 1, max: 8000 }, 3);
    const taken: string[] = [];
    // 100 passes twice; 200 fails, passes, fails; the refinement at 150 passes, fails, passes.
    const outcomes = [true, true, false, true, false, true, false, true];
    for (const passed of outcomes) {
      const rate = progress.nextRate();
      assert.notEqual(rate, null);
      taken.push(`${rate}#${progress.nextTry()}`);
      progress.record(step(rate!, passed));
    }
    assert.deepEqual(taken, ['100#1', '100#2', '200#1', '200#2', '200#3', '150#1', '150#2', '150#3']);
    assert.equal(progress.nextRate(), null, 'one refinement after the first failure, then over');
    assert.deepEqual(
      progress.trials.map((t) => [t.rate, t.passed, t.tries, t.triesPassed]),
      [
        [100, true, 2, 2],
        [200, false, 3, 1],
        [150, true, 3, 2],
      ],
    );
    assert.equal(progress.capacity(), 150);
  });

  test('stops at --max-rate when every step passes', () => {
    assert.deepEqual(searchUpTo(Infinity, { ...search, max: 500 }), [100, 200, 400, 500]);
  });

  test('stops when the gap is closed', () => {
    assert.deepEqual(searchUpTo(15, { start: 10, refine: 5, max: 100 }), [10, 20]);
  });

  test('a step passes only with every delivery acknowledged, ack p99 <= 50 ms, keep-up >= 0.95 and lag p99 < 1 s', () => {
    assert.equal(trialOf(100, { load: load(), processing: processing(1, 200), workersYieldSec: null }).passed, true);
    assert.equal(
      trialOf(100, { load: load({ latencyMs: { count: 1, p50: 1, p99: 51, p99_9: 60, max: 70 } }), processing: processing(1, 200), workersYieldSec: null }).passed,
      false,
    );
    assert.equal(trialOf(100, { load: load(), processing: processing(0.9, 200), workersYieldSec: null }).passed, false);
    assert.equal(trialOf(100, { load: load(), processing: processing(1, 1000), workersYieldSec: null }).passed, false);
    assert.equal(trialOf(100, { load: load({ non2xx: 1 }), processing: processing(1, 200), workersYieldSec: null }).passed, false);
    assert.equal(trialOf(100, { load: load(), processing: null, workersYieldSec: null }).passed, false, 'a target that does not process has no end-to-end capacity');
  });

  test('a rate tried several times passes when most tries pass, and stops trying once that is decided', () => {
    const tryAt = (passed: boolean, ackP99Ms: number, failures = 0): CapacityTrial => ({
      ...trialOf(100, { load: load(), processing: processing(1, 200), workersYieldSec: null }),
      passed,
      ackP99Ms,
      failures,
      triesPassed: passed ? 1 : 0,
    });
    assert.equal(triesDecided([], 3), false);
    assert.equal(triesDecided([tryAt(true, 20)], 3), false);
    assert.equal(triesDecided([tryAt(true, 20), tryAt(true, 30)], 3), true, 'two passes of three decide');
    assert.equal(triesDecided([tryAt(false, 60), tryAt(false, 70)], 3), true, 'two failures of three decide');
    assert.equal(triesDecided([tryAt(true, 20), tryAt(false, 60)], 3), false, 'one each: the third decides');
    assert.equal(triesDecided([tryAt(false, 60)], 1), true, 'one try: it decides alone');
    assert.equal(triesDecided([tryAt(true, 20), tryAt(false, 60)], 2), true, 'of two, a failure leaves no majority');
    assert.equal(triesDecided([tryAt(true, 20)], 2), false);

    const mixed = combineTries([tryAt(true, 20), tryAt(false, 60, 2), tryAt(true, 40)]);
    assert.equal(mixed.passed, true);
    assert.deepEqual([mixed.tries, mixed.triesPassed, mixed.ackP99Ms, mixed.failures], [3, 2, 40, 2]);
    const yielded = (seconds: number | null) => ({ ...tryAt(true, 20), workersYieldSec: seconds });
    assert.equal(combineTries([yielded(0), yielded(4), yielded(1)]).workersYieldSec, 1, 'the median of the yield seconds');
    assert.equal(combineTries([yielded(0), yielded(null)]).workersYieldSec, null, 'a try without the figure hides it');
    assert.equal(combineTries([tryAt(true, 20), tryAt(false, 60)]).passed, false, 'a tie is no majority');
    assert.equal(combineTries([{ ...tryAt(false, 20), keepUp: null }, tryAt(true, 20), tryAt(true, 20)]).keepUp, null, 'a figure missing from a try has no median');
  });
});
