import { PermanentError, RetryLaterError } from '../errors.js';

export interface RetryPolicy {
  maxAttempts: number;
  baseMs: number;
  maxMs: number;
}

/**
 * Exponential backoff with "equal jitter": half the capped exponential delay is fixed, half random,
 * so retries of many events failing together spread out but never come back immediately.
 */
export function retryDelayMs(attempt: number, policy: RetryPolicy, random: () => number = Math.random): number {
  // The exponent is bounded so a huge attempt count cannot overflow to Infinity (0 * Infinity = NaN).
  const exponential = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(Math.max(0, attempt - 1), 40));
  return Math.round(exponential / 2 + (random() * exponential) / 2);
}

/**
 * When a failed attempt runs again, or null for no automatic retry: a PermanentError, or the
 * attempts are used up. A RetryLaterError may name its own delay (e.g. a downstream's Retry-After).
 */
export function retryAt(error: unknown, attempts: number, policy: RetryPolicy, now: Date): Date | null {
  if (error instanceof PermanentError || attempts >= policy.maxAttempts) return null;
  const delay = error instanceof RetryLaterError && error.retryAfterMs !== undefined ? error.retryAfterMs : retryDelayMs(attempts, policy);
  return new Date(now.getTime() + delay);
}
