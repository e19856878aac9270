import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { retryDelayMs, type RetryPolicy } from '../../../src/processing/retry-policy.js';

const POLICY: RetryPolicy = { maxAttempts: 10, baseMs: 1_000, maxMs: 60_000 };
const LOWEST = () => 0;
const HIGHEST = () => 0.999999;

/** The capped exponential delay the jitter is applied to: base * 2^(attempt - 1), at most maxMs. */
function exponential(attempt: number): number {
  return Math.min(POLICY.maxMs, POLICY.baseMs * 2 ** (attempt - 1));
}

describe('retryDelayMs (exponential backoff, equal jitter)', () => {
  for (const attempt of [1, 2, 3, 6]) {
    test(`attempt ${attempt}: random=0 gives half of ${exponential(attempt)} ms, random~1 gives all of it`, () => {
      assert.equal(retryDelayMs(attempt, POLICY, LOWEST), exponential(attempt) / 2);
      assert.equal(retryDelayMs(attempt, POLICY, HIGHEST), exponential(attempt));
    });
  }

  test('the delay doubles with each attempt until the cap', () => {
    // 1000 * 2^5 = 32 s; 2^6 would exceed the 60 s cap.
    for (let attempt = 1; attempt <= 5; attempt++) {
      assert.equal(retryDelayMs(attempt + 1, POLICY, LOWEST), 2 * retryDelayMs(attempt, POLICY, LOWEST), `attempt ${attempt} -> ${attempt + 1}`);
    }
  });

  for (const attempt of [7, 50, 1000, 5000]) {
    test(`attempt ${attempt} is capped at maxMs`, () => {
      assert.equal(retryDelayMs(attempt, POLICY, LOWEST), POLICY.maxMs / 2);
      assert.equal(retryDelayMs(attempt, POLICY, HIGHEST), POLICY.maxMs);
    });
  }

  test('a zero base delay stays 0 for any attempt count (no 0 * Infinity)', () => {
    for (const attempt of [1, 1024, 1100, 100_000]) {
      assert.equal(retryDelayMs(attempt, { maxAttempts: 10, baseMs: 0, maxMs: 1000 }, LOWEST), 0);
    }
  });

  test('never below half nor above the full capped delay, whatever the random value', () => {
    for (let attempt = 1; attempt <= 12; attempt++) {
      for (const random of [0, 0.1, 0.25, 0.5, 0.75, 0.999999]) {
        const delay = retryDelayMs(attempt, POLICY, () => random);
        const full = exponential(attempt);
        assert.ok(delay >= full / 2 && delay <= full, `attempt ${attempt}, random ${random}: ${delay} ms outside [${full / 2}, ${full}]`);
      }
    }
  });
});
