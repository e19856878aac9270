import { metricValue } from '../test/support/metrics.js';

/**
 * The workers' yield counter of a webhook-inbox target, read from its `/metrics`: the seconds its
 * workers held processing back for a busy request thread (WORKER_YIELD_ELU). Whether a step's
 * keep-up was set by the yield or by the database's round trips is otherwise invisible.
 */
export const YIELD_COUNTER = 'webhook_inbox_workers_yield_seconds_total';

/** The yield counter's value in Prometheus's text format; null when it is not there or not a number. */
export function yieldCounterValue(exposition: string): number | null {
  const value = metricValue(exposition, YIELD_COUNTER);
  return value !== undefined && Number.isFinite(value) ? value : null;
}

/** The target's yield seconds so far; null when it cannot be read (no /metrics, no counter). */
export async function readYieldSeconds(url: string): Promise<number | null> {
  try {
    const response = await fetch(`${url}/metrics`);
    if (!response.ok) return null;
    return yieldCounterValue(await response.text());
  } catch {
    return null;
  }
}
