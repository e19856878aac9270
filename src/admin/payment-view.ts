import type { Selectable } from 'kysely';
import type { PaymentsTable } from '../db/schema.js';
import type { PaymentSection } from '../extension/domain-hooks.js';
import { storedMetadata } from '../domain/payment-change.js';
import type { PaymentMetadata, PaymentState } from '../model/payment-event.js';
import type { PaymentDetail } from '../ops/payment-detail.js';
import type { OutboxEntry } from '../outbox/outbox-store.js';
import { eventListItem, isoTime, type EventListItem } from './event-list.js';

/** One payment as the list shows it (the API's `payments[]`). */
export interface PaymentListItem {
  provider: string;
  paymentId: string;
  status: PaymentState;
  /** In the currency's smallest unit (cents, paise). */
  amount: number | null;
  currency: string | null;
  /** When a processed event last changed it (ISO 8601, UTC): the list's order. */
  updatedAt: string;
}

/** A payment with all it holds, named as in the list. */
export interface PaymentView extends PaymentListItem {
  email: string | null;
  /** The merchant's metadata: Stripe `metadata`, Razorpay `notes`, PayU `udf1`-`udf5`. */
  metadata: PaymentMetadata;
  /** When its first processed event created it. */
  createdAt: string;
}

/** One payment and everything it caused (GET /admin/api/payments/:provider/:paymentId, `payments show --json`). */
export interface PaymentDetailView {
  provider: string;
  paymentId: string;
  /** Null while none of its events has been processed. */
  payment: PaymentView | null;
  /** Its events in the order they were received, as the event list shows them. */
  events: EventListItem[];
  /** More events exist than `events` holds. */
  moreEvents: boolean;
  /** What each domain in use holds about it (an order, what it granted), in the domain's own words. */
  sections: PaymentSection[];
  outbox: OutboxEntry[];
}

type ListedColumns = 'provider' | 'payment_id' | 'status' | 'amount' | 'currency' | 'updated_at';

export function paymentListItem(row: Pick<Selectable<PaymentsTable>, ListedColumns>): PaymentListItem {
  return { provider: row.provider, paymentId: row.payment_id, status: row.status, amount: row.amount, currency: row.currency, updatedAt: isoTime(row.updated_at) };
}

export function paymentView(row: Selectable<PaymentsTable>): PaymentView {
  return {
    ...paymentListItem(row),
    email: row.email,
    metadata: storedMetadata(row.metadata),
    createdAt: isoTime(row.created_at),
  };
}

export function paymentDetailView(detail: PaymentDetail): PaymentDetailView {
  return {
    provider: detail.provider,
    paymentId: detail.paymentId,
    payment: detail.payment && paymentView(detail.payment),
    events: detail.events.map((event) => eventListItem(event, { outcome: event.outcome, outcomeDetail: event.outcome_detail })),
    moreEvents: detail.moreEvents,
    sections: detail.sections,
    outbox: detail.outbox,
  };
}
