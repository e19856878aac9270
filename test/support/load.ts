import { sql, type ControlledTransaction, type Kysely } from 'kysely';
import type { CoursePlatformDatabase } from '../../src/course-platform/schema.js';
import { fromDbTime, toDbTime, type EventStatus } from '../../src/db/schema.js';
import { parseOutcome } from '../../src/model/outcome.js';
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

/**
 * Holds the payments row of a payment in an uncommitted transaction of our own: the worker that
 * processes this payment then waits on it, caught in the middle of its business transaction, until
 * the caller rolls back. The row is inserted, or, when an earlier event stored it already (a chaos
 * run's deliveries come out of order), locked.
 */
export async function holdPayment(db: Kysely<CoursePlatformDatabase>, provider: string, paymentId: string): Promise<ControlledTransaction<CoursePlatformDatabase>> {
  const held = await db.startTransaction().execute();
  const stored = await held.selectFrom('payments').select('payment_id').where('provider', '=', provider).where('payment_id', '=', paymentId).forUpdate().executeTakeFirst();
  if (!stored) {
    const now = toDbTime(new Date());
    await held.insertInto('payments').values({ provider, payment_id: paymentId, status: 'created', created_at: now, updated_at: now }).execute();
  }
  return held;
}

/**
 * Counts over the whole database, for "every event processed exactly once, effects exact": `applied`
 * events moved their payment, `alreadyCaptured` ones found it captured and changed nothing.
 */
export async function outcomeCounts(db: Kysely<CoursePlatformDatabase>): Promise<Record<string, number>> {
  const count = (table: keyof CoursePlatformDatabase, where = sql``) => sql`(SELECT COUNT(*) FROM ${sql.table(table)} ${where})`;
  const counts = {
    events: count('webhook_events'),
    processed: count('webhook_events', sql`WHERE status = 'processed'`),
    notExactlyOneAttempt: count('webhook_events', sql`WHERE attempts <> 1`),
    payments: count('payments', sql`WHERE status = 'captured'`),
    orders: count('orders'),
    enrollments: count('enrollments', sql`WHERE status = 'active'`),
    receipts: count('outbox', sql`WHERE idempotency_key LIKE 'receipt:%'`),
  };
  const columns = Object.entries(counts).map(([name, query]) => sql`${query} AS ${sql.ref(name)}`);
  const [{ rows }, stored] = await Promise.all([
    sql<Record<string, number | string>>`SELECT ${sql.join(columns)}`.execute(db),
    db.selectFrom('webhook_events').select('outcome_detail').where('status', '=', 'processed').execute(),
  ]);
  const outcomes = stored.map((row) => parseOutcome(row.outcome_detail));
  return {
    ...Object.fromEntries(Object.entries(rows[0]!).map(([key, value]) => [key, Number(value)])),
    applied: outcomes.filter((outcome) => outcome?.kind === 'applied').length,
    alreadyCaptured: outcomes.filter((outcome) => outcome?.kind === 'stale' && outcome.state === 'captured' && !outcome.detailsCompleted).length,
  };
}

/** Events in webhook_events with the status given (all of them without). */
export async function countEvents(db: Kysely<CoursePlatformDatabase>, status?: EventStatus): Promise<number> {
  const row = await db
    .selectFrom('webhook_events')
    .select((eb) => eb.fn.countAll().as('n'))
    .$if(status !== undefined, (query) => query.where('status', '=', status!))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function waitUntilAllProcessed(db: Kysely<CoursePlatformDatabase>, events: number, timeoutMs: number): Promise<void> {
  await waitFor(`${events} events processed`, async () => (await countEvents(db, 'processed')) >= events, timeoutMs);
}

/** Lag from receipt (row committed) to processed (business transaction committed), in ms. */
export async function processingLag(db: Kysely<CoursePlatformDatabase>, eventIdPrefix: string): Promise<{ median: number; p99: number; max: number; events: number }> {
  const rows = await db
    .selectFrom('webhook_events')
    .select(['created_at', 'processed_at'])
    .where('event_id', 'like', `${eventIdPrefix}%`)
    .where('processed_at', 'is not', null)
    .execute();
  const lags = rows.map((r) => fromDbTime(r.processed_at!).getTime() - fromDbTime(r.created_at).getTime()).sort((a, b) => a - b);
  const at = (q: number) => lags[Math.min(lags.length - 1, Math.floor(q * lags.length))]!;
  return { median: at(0.5), p99: at(0.99), max: lags.at(-1)!, events: lags.length };
}
