import type { Selectable } from 'kysely';
import type { EnrollmentsTable, OrdersTable } from '../course-platform/schema.js';
import type { PaymentsTable } from '../db/schema.js';
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
  userId: string | null;
  courseId: string | null;
  /** The merchant's metadata: Stripe `metadata`, Razorpay `notes`, PayU `udf1`-`udf5`. */
  metadata: PaymentMetadata;
  /** When its first processed event created it. */
  createdAt: string;
}

/** The course platform's order of the payment. */
export interface OrderView {
  id: number;
  status: Selectable<OrdersTable>['status'];
  amount: number | null;
  currency: string | null;
  userId: string | null;
  courseId: string | null;
  createdAt: string;
  updatedAt: string;
}

/** An enrollment the payment granted. */
export interface EnrollmentView {
  id: number;
  userId: string;
  courseId: string;
  status: Selectable<EnrollmentsTable>['status'];
  createdAt: string;
  updatedAt: string;
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
  order: OrderView | null;
  enrollments: EnrollmentView[];
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
    userId: row.user_id,
    courseId: row.course_id,
    metadata: storedMetadata(row.metadata),
    createdAt: isoTime(row.created_at),
  };
}

function orderView(row: Selectable<OrdersTable>): OrderView {
  return {
    id: row.id,
    status: row.status,
    amount: row.amount,
    currency: row.currency,
    userId: row.user_id,
    courseId: row.course_id,
    createdAt: isoTime(row.created_at),
    updatedAt: isoTime(row.updated_at),
  };
}

function enrollmentView(row: Selectable<EnrollmentsTable>): EnrollmentView {
  return { id: row.id, userId: row.user_id, courseId: row.course_id, status: row.status, createdAt: isoTime(row.created_at), updatedAt: isoTime(row.updated_at) };
}

export function paymentDetailView(detail: PaymentDetail): PaymentDetailView {
  return {
    provider: detail.provider,
    paymentId: detail.paymentId,
    payment: detail.payment && paymentView(detail.payment),
    events: detail.events.map((event) => eventListItem(event, { outcome: event.outcome, outcomeDetail: event.outcome_detail })),
    moreEvents: detail.moreEvents,
    order: detail.order && orderView(detail.order),
    enrollments: detail.enrollments.map(enrollmentView),
    outbox: detail.outbox,
  };
}
