import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import { paymentEffectKeys } from '../course-platform/handlers.js';
import type { CoursePlatformTables, EnrollmentsTable, OrdersTable } from '../course-platform/schema.js';
import type { InboxDatabase, PaymentsTable } from '../db/schema.js';
import { paymentOrderingKey } from '../forwarding/forwarded-event.js';
import { OutboxStore, type OutboxEntry } from '../outbox/outbox-store.js';
import { OperationError } from './errors.js';
import type { EventRow } from '../db/event-rows.js';
import { shownOutcome, type EventOutcome } from '../model/outcome.js';
import { findEvents } from './event-lookup.js';

/**
 * An event as listings show it: everything but the payload, the headers and the lease token, its
 * outcome as readers show it (`outcome` in words, `outcome_detail` structured, see shownOutcome).
 */
export type EventSummary = Omit<EventRow, 'payload' | 'headers' | 'lease_token' | 'outcome_detail'> & { outcome_detail: EventOutcome | null };

export function eventSummary({ payload: _payload, headers: _headers, lease_token: _token, ...summary }: EventRow): EventSummary {
  const { outcome, outcomeDetail } = shownOutcome(summary.outcome, summary.outcome_detail);
  return { ...summary, outcome, outcome_detail: outcomeDetail };
}

/** More events than any payment has; the list says when it was cut. */
const EVENTS_SHOWN = 1000;

/** One payment and everything it caused, for `payments show`. */
export interface PaymentDetail {
  provider: string;
  paymentId: string;
  /** Its state and details; null while none of its events has been processed. */
  payment: Selectable<PaymentsTable> | null;
  /** Its events in the order they were received. */
  events: EventSummary[];
  moreEvents: boolean;
  order: Selectable<OrdersTable> | null;
  /** What it granted (an enrollment passes to another payment of the same course when this one is refunded). */
  enrollments: Array<Selectable<EnrollmentsTable>>;
  /** Its side effects: receipt, fulfilment request, cancellation, forwarded events. */
  outbox: OutboxEntry[];
}

/** `coursePlatform`: whether its tables are there to read (the course platform runs). */
export async function paymentDetail(db: Kysely<InboxDatabase>, clock: Clock, provider: string, paymentId: string, coursePlatform: boolean): Promise<PaymentDetail> {
  const course = db.withTables<CoursePlatformTables>();
  const [payment, order, enrollments, found, outbox] = await Promise.all([
    db.selectFrom('payments').selectAll().where('provider', '=', provider).where('payment_id', '=', paymentId).executeTakeFirst(),
    coursePlatform ? course.selectFrom('orders').selectAll().where('provider', '=', provider).where('payment_id', '=', paymentId).executeTakeFirst() : undefined,
    coursePlatform ? course.selectFrom('enrollments').selectAll().where('provider', '=', provider).where('payment_id', '=', paymentId).orderBy('id').execute() : [],
    findEvents(db, { provider, payment: paymentId, limit: EVENTS_SHOWN }, 'oldest'),
    new OutboxStore(db, clock).list({ keys: paymentEffectKeys(provider, paymentId), orderingKeys: [paymentOrderingKey(provider, paymentId)], limit: EVENTS_SHOWN }),
  ]);
  if (!payment && found.events.length === 0 && !order && enrollments.length === 0 && outbox.length === 0) {
    throw new OperationError(`no payment ${paymentId} from ${provider}: no event of it is stored (archived ones: "archive search --payment ${paymentId}")`, 'payment_not_found');
  }
  return {
    provider,
    paymentId,
    payment: payment ?? null,
    events: found.events.map(eventSummary),
    moreEvents: found.more,
    order: order ?? null,
    enrollments,
    // In the order they were written, like the events.
    outbox: outbox.reverse(),
  };
}
