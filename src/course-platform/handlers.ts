import { sql, type ExpressionBuilder, type Insertable, type Transaction } from 'kysely';
import { caseWhen } from '../db/sql-case.js';
import type { PaymentContext, PaymentHandlers } from '../domain/applier.js';
import type { Payment } from '../domain/payments.js';
import { storableKey, writeOutbox } from '../outbox/outbox-writer.js';
import { perBatch } from '../store/complete.js';
import type { BusinessTransaction } from '../store/inbox-store.js';
import type { CoursePlatformDatabase, CoursePlatformTables } from './schema.js';
import { buyerOf, storableBuyer, type Buyer, type CoursePlatformSettings } from './settings.js';

/** The outbox kinds this domain writes; the outbox dispatcher has a transport for each. */
export const COURSE_EFFECTS = {
  receipt: 'receipt_email',
  fulfilment: 'fulfilment',
  cancellation: 'fulfilment_cancellation',
} as const;

/**
 * Idempotency keys derive from the payment, never from the event or the attempt:
 * `<effect>:<provider>:<payment id>`. A payment id may take the key column's 255 characters, so a key
 * that would be longer ends in the SHA-256 of the whole key instead (`<effect>:<provider>:sha256:<hex>`).
 */
function effectKey(effect: string, provider: string, paymentId: string): string {
  return storableKey(`${effect}:${provider}:${paymentId}`, `${effect}:${provider}:`);
}

export function receiptKey(provider: string, paymentId: string): string {
  return effectKey('receipt', provider, paymentId);
}

export function fulfilmentKey(provider: string, paymentId: string): string {
  return effectKey('fulfilment', provider, paymentId);
}

export function cancellationKey(provider: string, paymentId: string): string {
  return effectKey('fulfilment-cancel', provider, paymentId);
}

/**
 * Every key this domain writes for a payment: receipt, fulfilment, cancellation. With an empty payment
 * id, the prefixes of the provider's keys.
 */
export function paymentEffectKeys(provider: string, paymentId: string): string[] {
  return [receiptKey(provider, paymentId), fulfilmentKey(provider, paymentId), cancellationKey(provider, paymentId)];
}

/** What every course-platform outbox row carries: the payment as it stood when the effect was written. */
export interface PaymentEffect {
  provider: string;
  paymentId: string;
  userId: string | null;
  courseId: string | null;
  /** In the currency's smallest unit. */
  amount: number | null;
  currency: string | null;
  email: string | null;
}

interface Effect {
  kind: string;
  idempotencyKey: string;
  /** An effect that must be final before this one is delivered. */
  dependsOnKey?: string;
}

type Context = PaymentContext<CoursePlatformDatabase>;
type Row<Table extends keyof CoursePlatformTables> = Insertable<CoursePlatformTables[Table]>;

/** The rows the events of one batch add, written at its commit: one statement per table, not per event. */
interface BatchRows {
  orders: Array<Row<'orders'>>;
  enrollments: Array<Row<'enrollments'>>;
}

/**
 * Unique keys make each row idempotent (a second delivery or event of a payment adds nothing). An
 * order that exists already was written before its payment's details were all known: it gets the
 * ones it lacks. An enrollment that exists and was revoked is a course bought again after a refund:
 * the new payment re-activates it. Revocations ran before, during the batch's events, so a batch that
 * refunds one payment and grants the same course through another leaves the course granted.
 */
async function writeRows(batchTx: BusinessTransaction, { orders, enrollments }: BatchRows): Promise<void> {
  const tx = batchTx.withTables<CoursePlatformTables>();
  if (orders.length > 0) {
    const inserted = await tx.insertInto('orders').orIgnore().values(orders).executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows) < orders.length) await fillOrderDetails(tx, orders);
  }
  if (enrollments.length === 0) return;
  const inserted = await tx.insertInto('enrollments').orIgnore().values(enrollments).executeTakeFirst();
  if (Number(inserted.numInsertedOrUpdatedRows) === enrollments.length) return;
  // Keyed by (user, course), not by id: the rows that were there already have not been read.
  const isPair = (eb: ExpressionBuilder<CoursePlatformDatabase, 'enrollments'>, row: Row<'enrollments'>) =>
    eb.and([eb('user_id', '=', row.user_id), eb('course_id', '=', row.course_id)]);
  await tx
    .updateTable('enrollments')
    .set((eb) => {
      const byPair = (column: 'provider' | 'payment_id' | 'updated_at') =>
        caseWhen(
          enrollments.map((row) => [isPair(eb, row), row[column]]),
          sql.ref(column),
        );
      return { status: 'active', provider: byPair('provider'), payment_id: byPair('payment_id'), updated_at: byPair('updated_at') };
    })
    .where('status', '=', 'revoked')
    .where((eb) => eb.or(enrollments.map((row) => isPair(eb, row))))
    .execute();
}

const ORDER_DETAILS = ['user_id', 'course_id', 'amount', 'currency'] as const;

/** Each detail only where the stored order lacks it, as for the payment itself. */
async function fillOrderDetails(tx: Transaction<CoursePlatformDatabase>, orders: Array<Row<'orders'>>): Promise<void> {
  const isOrder = (eb: ExpressionBuilder<CoursePlatformDatabase, 'orders'>, row: Row<'orders'>) =>
    eb.and([eb('provider', '=', row.provider), eb('payment_id', '=', row.payment_id)]);
  await tx
    .updateTable('orders')
    .set((eb) => {
      const details = ORDER_DETAILS.map(
        (column) =>
          [
            column,
            caseWhen(
              orders.map((row) => [isOrder(eb, row), eb.fn.coalesce(column, eb.val(row[column] ?? null))]),
              sql.ref(column),
            ),
          ] as const,
      );
      return Object.fromEntries(details);
    })
    .where((eb) => eb.or(orders.map((row) => isOrder(eb, row))))
    .where((eb) => eb.or(ORDER_DETAILS.map((column) => eb(column, 'is', null))))
    .execute();
}

const batchRows = perBatch<BatchRows, unknown>(() => ({ orders: [], enrollments: [] }), writeRows);

function addEffects(context: Context, buyer: Buyer, effects: Effect[]): void {
  const payload = paymentEffect(context.payment, buyer);
  for (const { kind, idempotencyKey, dependsOnKey } of effects) writeOutbox(context, { kind, key: idempotencyKey, payload, after: dependsOnKey });
}

function paymentEffect(payment: Payment, { userId, courseId }: Buyer): PaymentEffect {
  return {
    provider: payment.provider,
    paymentId: payment.payment_id,
    userId,
    courseId,
    amount: payment.amount === null ? null : Number(payment.amount),
    currency: payment.currency,
    email: payment.email,
  };
}

async function grantCourse(context: Context, fields: CoursePlatformSettings['buyerFields']): Promise<void> {
  const { tx, batch, payment, now } = context;
  const buyer = storableBuyer(payment, fields);
  const { userId, courseId } = buyer;
  const rows = batchRows(batch, tx);
  rows.orders.push({
    provider: payment.provider,
    payment_id: payment.payment_id,
    user_id: userId,
    course_id: courseId,
    amount: payment.amount,
    currency: payment.currency,
    status: 'paid',
    created_at: now,
    updated_at: now,
  });
  const enrolled = userId !== null && courseId !== null;
  if (enrolled) {
    rows.enrollments.push({ user_id: userId, course_id: courseId, status: 'active', provider: payment.provider, payment_id: payment.payment_id, created_at: now, updated_at: now });
  }
  // An effect is written once the payment carries what it needs, so that nothing goes out half
  // addressed and final: this handler runs again when a later event completes the details (Stripe
  // Checkout, for one, may put the metadata and the address on the session, not the payment intent).
  addEffects(context, buyer, [
    ...(payment.email === null ? [] : [{ kind: COURSE_EFFECTS.receipt, idempotencyKey: receiptKey(payment.provider, payment.payment_id) }]),
    ...(enrolled ? [{ kind: COURSE_EFFECTS.fulfilment, idempotencyKey: fulfilmentKey(payment.provider, payment.payment_id) }] : []),
  ]);
}

async function revokeCourse(context: Context, fields: CoursePlatformSettings['buyerFields']): Promise<void> {
  const { tx, payment, now } = context;
  await tx.updateTable('orders').set({ status: 'refunded', updated_at: now }).where('provider', '=', payment.provider).where('payment_id', '=', payment.payment_id).execute();
  // Only what this payment granted: a later purchase of the same course stays active. So does an
  // enrollment that another payment of the same customer for the same course paid for too (a double
  // charge, one of them refunded): it passes to that payment. The orders are read inside the UPDATE,
  // as committed then; a capture that commits later re-activates the enrollment itself (writeRows).
  await tx
    .updateTable('enrollments')
    .set((eb) => {
      const otherPaid = eb
        .selectFrom('orders')
        .whereRef('orders.user_id', '=', 'enrollments.user_id')
        .whereRef('orders.course_id', '=', 'enrollments.course_id')
        .where('orders.status', '=', 'paid')
        .orderBy('orders.id')
        .limit(1);
      return {
        status: eb
          .case()
          .when(eb.exists(otherPaid.select('orders.id')))
          .then('active' as const)
          .else('revoked' as const)
          .end(),
        provider: eb.fn.coalesce(otherPaid.select('orders.provider'), eb.ref('enrollments.provider')),
        payment_id: eb.fn.coalesce(otherPaid.select('orders.payment_id'), eb.ref('enrollments.payment_id')),
        updated_at: now,
      };
    })
    .where('provider', '=', payment.provider)
    .where('payment_id', '=', payment.payment_id)
    .where('status', '=', 'active')
    .execute();

  // Only a fulfilment that was requested is cancelled (a refund seen before any capture has none),
  // and never before it: the cancellation waits until the fulfilment row is final. No second receipt.
  // The fulfilment was requested by an earlier event of the payment, if at all, whose rows are
  // written by now: a payment has one event per batch, and a transaction writes a batch's rows before
  // the next batch starts.
  const fulfilment = fulfilmentKey(payment.provider, payment.payment_id);
  const requested = await tx.selectFrom('outbox').select('id').where('idempotency_key', '=', fulfilment).executeTakeFirst();
  if (requested) {
    addEffects(context, buyerOf(payment, fields), [
      { kind: COURSE_EFFECTS.cancellation, idempotencyKey: cancellationKey(payment.provider, payment.payment_id), dependsOnKey: fulfilment },
    ]);
  }
}

/**
 * The reference business: a course platform. A captured payment creates one order, one enrollment
 * per (user, course), one receipt and one fulfilment request in the outbox; a full refund revokes
 * what the payment granted and, when a fulfilment was requested, asks for its cancellation. Who
 * bought which course is read from the payment's metadata, under the fields of its settings. Unique
 * keys make every write idempotent on its own.
 */
export function coursePlatformHandlers(settings: Pick<CoursePlatformSettings, 'buyerFields'>): PaymentHandlers<CoursePlatformDatabase> {
  const fields = settings.buyerFields;
  return {
    captured: [(context) => grantCourse(context, fields)],
    refunded: [(context) => revokeCourse(context, fields)],
  };
}
