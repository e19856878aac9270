import type { Kysely } from 'kysely';
import { receiptKey } from '../src/course-platform/handlers.js';
import type { CoursePlatformDatabase } from '../src/course-platform/schema.js';
import { fromDbTime } from '../src/db/schema.js';
import { parseOutcome } from '../src/model/outcome.js';
import type { FaultRecord } from './faults.js';
import { foldStates, type SimulatedPayment } from './lifecycles.js';
import { isAcknowledged, type ProviderSimulator } from './simulator.js';

/** The invariants of docs/design.md as checked after a run: each with its number of violations and a few examples. */
export interface InvariantResult {
  name: string;
  description: string;
  checked: number;
  violations: number;
  examples: string[];
}

const EXAMPLES_KEPT = 5;

class Invariant {
  violations = 0;
  readonly examples: string[] = [];
  checked = 0;

  constructor(
    readonly name: string,
    readonly description: string,
  ) {}

  check(holds: boolean, example: () => string): void {
    this.checked++;
    if (holds) return;
    this.violations++;
    if (this.examples.length < EXAMPLES_KEPT) this.examples.push(example());
  }

  result(): InvariantResult {
    return { name: this.name, description: this.description, checked: this.checked, violations: this.violations, examples: this.examples };
  }
}

/**
 * Reads the whole database once and holds it against what the simulator sent and what every
 * delivery got. `outageGraceMs`: how long after a database fault a 503 is still expected.
 */
export async function checkInvariants(
  db: Kysely<CoursePlatformDatabase>,
  simulator: ProviderSimulator,
  faults: readonly FaultRecord[],
  outageGraceMs: number,
): Promise<InvariantResult[]> {
  const [events, payments, orders, enrollments, outbox] = await Promise.all([
    db
      .selectFrom('webhook_events')
      .leftJoin('webhook_event_bodies', 'webhook_event_bodies.event_row_id', 'webhook_events.id')
      .select(['provider', 'event_id', 'status', 'outcome_detail', 'lease_expires_at', 'payment_id', 'webhook_event_bodies.event_row_id as body_of'])
      .execute(),
    db.selectFrom('payments').select(['provider', 'payment_id', 'status']).execute(),
    db.selectFrom('orders').select(['provider', 'payment_id', 'status']).execute(),
    db.selectFrom('enrollments').select(['user_id', 'status']).execute(),
    db.selectFrom('outbox').select('idempotency_key').where('idempotency_key', 'like', 'receipt:%').execute(),
  ]);
  const key = (provider: string, id: string) => `${provider}\u0000${id}`;
  const stored = new Map(events.map((row) => [key(row.provider, row.event_id), row]));
  const sent = new Set(simulator.events.map((event) => key(event.provider, event.eventId)));

  const acknowledged = new Invariant('acknowledged-is-recorded', 'every delivery that got a 2xx is in webhook_events');
  const acknowledgedEvents = new Set(simulator.deliveries.filter(isAcknowledged).map((d) => d.event));
  for (const i of acknowledgedEvents) {
    const event = simulator.events[i]!;
    acknowledged.check(stored.has(key(event.provider, event.eventId)), () => `${event.provider} ${event.eventId} acknowledged, not stored`);
  }

  const withBody = new Invariant('recorded-with-body', 'every stored event has its body row (payload and headers), written in the same transaction');
  for (const row of events) withBody.check(row.body_of !== null, () => `${row.provider} ${row.event_id} stored without its body`);

  const exactlyOnce = new Invariant('processed-exactly-once', 'every event sent is stored once and processed (and nothing else is stored)');
  for (const event of simulator.events) {
    const row = stored.get(key(event.provider, event.eventId));
    exactlyOnce.check(row?.status === 'processed', () => `${event.provider} ${event.eventId}: ${row ? row.status : 'missing'}`);
  }
  for (const row of events) exactlyOnce.check(sent.has(key(row.provider, row.event_id)), () => `${row.provider} ${row.event_id} stored but never sent`);

  const effects = new Invariant(
    'one-effect-per-payment',
    'captured: one order (paid), one active enrollment, one receipt; refunded after a capture: the same, order refunded and enrollment revoked; otherwise none',
  );
  const fold = new Invariant('state-is-forward-fold', "final payment state is the highest state among the payment's events");
  const paymentState = new Map(payments.map((row) => [key(row.provider, row.payment_id), row.status]));
  const ordersOf = groupBy(orders, (row) => key(row.provider, row.payment_id));
  const enrollmentsOf = groupBy(enrollments, (row) => row.user_id);
  const receipts = new Set(outbox.map((row) => row.idempotency_key));
  const captureApplied = new Set(
    events
      .filter((row) => {
        const outcome = parseOutcome(row.outcome_detail);
        return outcome?.kind === 'applied' && outcome.to === 'captured';
      })
      .map((row) => key(row.provider, row.payment_id ?? '')),
  );
  for (const payment of simulator.payments) {
    const paymentKey = key(payment.provider, payment.paymentId);
    const expectedState = foldStates(payment.events.map((e) => e.state));
    const state = paymentState.get(paymentKey);
    fold.check(state === expectedState, () => `${payment.provider} ${payment.paymentId}: ${state ?? 'no row'}, expected ${expectedState}`);

    const granted = expectedState === 'captured' || (expectedState === 'refunded' && captureApplied.has(paymentKey));
    const expected = granted ? { order: expectedState === 'captured' ? 'paid' : 'refunded', enrollment: expectedState === 'captured' ? 'active' : 'revoked', receipts: 1 } : null;
    const actual = describeEffects(payment, ordersOf.get(paymentKey) ?? [], enrollmentsOf.get(payment.userId) ?? [], receipts);
    const wanted = expected ? `orders [${expected.order}] enrollments [${expected.enrollment}] receipts 1` : 'orders [] enrollments [] receipts 0';
    effects.check(actual === wanted, () => `${payment.provider} ${payment.paymentId} (${expectedState}): ${actual}, expected ${wanted}`);
  }

  const stuck = new Invariant('no-expired-lease-left', "no event left in 'processing' with an expired lease");
  const now = Date.now();
  for (const row of events) {
    stuck.check(
      !(row.status === 'processing' && row.lease_expires_at !== null && fromDbTime(row.lease_expires_at).getTime() < now),
      () => `${row.provider} ${row.event_id} processing, lease expired ${row.lease_expires_at}`,
    );
  }

  const serverErrors = new Invariant('no-5xx-but-503-in-outage', 'no 5xx answer, except 503 while the database was down (plus a grace after it came back)');
  const outages = faults.filter((fault) => fault.databaseDown);
  for (const delivery of simulator.deliveries) {
    const excused = delivery.status === 503 && outages.some((o) => delivery.endedAt >= o.startedAt && delivery.startedAt <= o.endedAt + outageGraceMs);
    serverErrors.check(
      delivery.status < 500 || excused,
      () => `${delivery.status} ${delivery.error ?? ''} at ${new Date(delivery.startedAt).toISOString()} for ${simulator.events[delivery.event]!.eventId}`,
    );
  }

  return [acknowledged, withBody, exactlyOnce, effects, fold, stuck, serverErrors].map((invariant) => invariant.result());
}

function describeEffects(payment: SimulatedPayment, orders: Array<{ status: string }>, enrollments: Array<{ status: string }>, receipts: Set<string>): string {
  const statuses = (rows: Array<{ status: string }>) =>
    rows
      .map((row) => row.status)
      .sort()
      .join(',');
  return `orders [${statuses(orders)}] enrollments [${statuses(enrollments)}] receipts ${receipts.has(receiptKey(payment.provider, payment.paymentId)) ? 1 : 0}`;
}

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(keyOf(item));
    if (group) group.push(item);
    else groups.set(keyOf(item), [item]);
  }
  return groups;
}
