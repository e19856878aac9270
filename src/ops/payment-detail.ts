import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import type { InboxDatabase, PaymentsTable } from '../db/schema.js';
import type { DomainViews } from '../extension/compose-domains.js';
import type { PaymentSection } from '../extension/domain-hooks.js';
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
  /** What each domain holds about it (an order, what it granted), in its own words. */
  sections: PaymentSection[];
  /** Its side effects, as its domains find them: a receipt, a fulfilment request, forwarded events. */
  outbox: OutboxEntry[];
}

/** The domains in use say what they hold about the payment and where their outbox rows of it are. */
export async function paymentDetail(
  db: Kysely<InboxDatabase>,
  clock: Clock,
  domains: Pick<DomainViews, 'describePayment' | 'paymentOutbox'>,
  provider: string,
  paymentId: string,
): Promise<PaymentDetail> {
  const rows = domains.paymentOutbox([{ provider, paymentId }]);
  const [payment, sections, found, outbox] = await Promise.all([
    db.selectFrom('payments').selectAll().where('provider', '=', provider).where('payment_id', '=', paymentId).executeTakeFirst(),
    domains.describePayment(db, { provider, paymentId }),
    findEvents(db, { provider, paymentId, limit: EVENTS_SHOWN }, 'oldest'),
    rows ? new OutboxStore(db, clock).list({ ...rows, limit: EVENTS_SHOWN }) : [],
  ]);
  if (!payment && found.events.length === 0 && sections.every((section) => section.records.length === 0) && outbox.length === 0) {
    throw new OperationError(`no payment ${paymentId} from ${provider}: no event of it is stored (archived ones: "archive search --payment ${paymentId}")`, 'payment_not_found');
  }
  return {
    provider,
    paymentId,
    payment: payment ?? null,
    events: found.events.map(eventSummary),
    moreEvents: found.more,
    sections,
    // In the order they were written, like the events.
    outbox: outbox.reverse(),
  };
}
