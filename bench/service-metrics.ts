/**
 * The workers' yield counter of a webhook-inbox target, read from its `/metrics`: the seconds its
 * workers held processing back for a busy request thread (WORKER_YIELD_ELU). Whether a step's
 * keep-up was set by the yield or by the database's round trips is otherwise invisible.
 */
export const YIELD_COUNTER = 'webhook_inbox_workers_yield_seconds_total';

/** The value of an unlabelled counter in Prometheus's text format; null when it is not there. */
export function counterValue(exposition: string, name: string): number | null {
  for (const line of exposition.split('\n')) {
    const [metric, value] = line.split(' ');
    if (metric === name && value !== undefined) {
      const number = Number(value);
      return Number.isFinite(number) ? number : null;
    }
  }
  return null;
}

/** The target's yield seconds so far; null when it cannot be read (no /metrics, no counter). */
export async function readYieldSeconds(url: string): Promise<number | null> {
  try {
    const response = await fetch(`${url}/metrics`);
    if (!response.ok) return null;
    return counterValue(await response.text(), YIELD_COUNTER);
  } catch {
    return null;
  }
}
