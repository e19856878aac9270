import type { Connection, Pool } from 'mysql2/promise';
import { waitFor } from './harness.js';
import { stripeDelivery, stripePaymentEvent, type Delivery } from './signing.js';

/** What a provider saw for one delivery. */
export interface Answer {
  status: number;
  outcome?: string;
  error?: string;
}

/** Posts like a provider would, with its own timeout: a hanging receiver shows up as status 0. */
export async function deliver(baseUrl: string, delivery: Delivery, timeoutMs = 20_000): Promise<Answer> {
  try {
    const response = await fetch(`${baseUrl}/webhooks/${delivery.provider}`, {
      method: 'POST',
      headers: delivery.headers,
      body: delivery.body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    const body = (await response.json()) as { outcome?: string; error?: string };
    return { status: response.status, outcome: body.outcome, error: body.error };
  } catch {
    return { status: 0 };
  }
}

export type Acknowledged = Answer & { retries: number };

/**
 * Delivers as a provider does: an answer other than 200 (a 503 under overload, no answer) is retried
 * after a pause until a 200 arrives. Returns the final answer and how many retries it took.
 */
export async function deliverUntilAcknowledged(baseUrl: string, delivery: () => Delivery, pauseMs = 200): Promise<Acknowledged> {
  for (let retries = 0; ; retries++) {
    const answer = await deliver(baseUrl, delivery());
    if (answer.status === 200) return { ...answer, retries };
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
}

/** Runs the tasks with at most `concurrency` at a time, in order of the list. */
export async function inParallel<T>(tasks: Array<() => Promise<T>>, concurrency: number): Promise<T[]> {
  const results = new Array<T>(tasks.length);
  let next = 0;
  const lane = async () => {
    while (next < tasks.length) {
      const i = next++;
      results[i] = await tasks[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, tasks.length) }, lane));
  return results;
}

export interface PaymentEvent {
  eventId: string;
  paymentId: string;
  /** Signs afresh at each call, as Stripe signs each retry. */
  delivery: () => Delivery;
}

/**
 * Captured Stripe payments for the course platform: `payments` PaymentIntents, the first
 * `withCharge` of them also reported by a charge.succeeded (two events, one payment).
 */
export function capturedPayments(prefix: string, payments: number, withCharge: number): PaymentEvent[] {
  const events: PaymentEvent[] = [];
  for (let n = 0; n < payments; n++) {
    const paymentId = `pi_${prefix}_${n}`;
    const types = n < withCharge ? ['payment_intent.succeeded', 'charge.succeeded'] : ['payment_intent.succeeded'];
    for (const type of types) {
      const eventId = `evt_${prefix}_${n}_${type}`;
      const event = stripePaymentEvent(eventId, type, paymentId, { userId: `u_${prefix}_${n}`, courseId: 'c_cluster' });
      events.push({ eventId, paymentId, delivery: () => stripeDelivery(event) });
    }
  }
  return events;
}

/** Counts over the whole database, for "every event processed exactly once, effects exact". */
export async function outcomeCounts(sql: Connection) {
  const [[row]] = (await sql.query(`
    SELECT
      (SELECT COUNT(*) FROM webhook_events) AS events,
      (SELECT COUNT(*) FROM webhook_events WHERE status = 'processed') AS processed,
      (SELECT COUNT(*) FROM webhook_events WHERE attempts <> 1) AS notExactlyOneAttempt,
      (SELECT COUNT(*) FROM webhook_events WHERE outcome LIKE 'applied:%') AS applied,
      (SELECT COUNT(*) FROM webhook_events WHERE outcome = 'ignored: payment already captured') AS alreadyCaptured,
      (SELECT COUNT(*) FROM payments WHERE status = 'captured') AS payments,
      (SELECT COUNT(*) FROM orders) AS orders,
      (SELECT COUNT(*) FROM enrollments WHERE status = 'active') AS enrollments,
      (SELECT COUNT(*) FROM outbox WHERE idempotency_key LIKE 'receipt:%') AS receipts
  `)) as unknown as [[Record<string, number | string>]];
  return Object.fromEntries(Object.entries(row).map(([key, value]) => [key, Number(value)]));
}

export async function waitUntilAllProcessed(sql: Connection, events: number, timeoutMs: number): Promise<void> {
  await waitFor(
    `${events} events processed`,
    async () => {
      const [[row]] = (await sql.query("SELECT COUNT(*) AS n FROM webhook_events WHERE status = 'processed'")) as unknown as [[{ n: number }]];
      return Number(row.n) >= events;
    },
    timeoutMs,
  );
}

/** Lag from receipt (row committed) to processed (business transaction committed), in ms. */
export async function processingLag(sql: Connection | Pool, eventIdPrefix: string): Promise<{ median: number; p99: number; max: number; events: number }> {
  const [rows] = (await sql.query('SELECT TIMESTAMPDIFF(MICROSECOND, created_at, processed_at) / 1000 AS ms FROM webhook_events WHERE event_id LIKE ? ORDER BY ms', [
    `${eventIdPrefix}%`,
  ])) as unknown as [Array<{ ms: string }>];
  const lags = rows.map((r) => Number(r.ms));
  const at = (q: number) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))]!;
  return { median: at(0.5), p99: at(0.99), max: lags.at(-1)!, events: lags.length };
}
