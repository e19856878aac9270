import type { PaymentContext, PaymentHandlers } from './handlers.js';
import type { PaymentRow } from './payments.js';

/** The outbox kinds this domain writes; the outbox dispatcher has a transport for each. */
export const COURSE_EFFECTS = {
  receipt: 'receipt_email',
  fulfilment: 'fulfilment',
  cancellation: 'fulfilment_cancellation',
} as const;

/** Idempotency keys derive from the payment, never from the event or the attempt. */
export function receiptKey(provider: string, paymentId: string): string {
  return `receipt:${provider}:${paymentId}`;
}

export function fulfilmentKey(provider: string, paymentId: string): string {
  return `fulfilment:${provider}:${paymentId}`;
}

export function cancellationKey(provider: string, paymentId: string): string {
  return `fulfilment-cancel:${provider}:${paymentId}`;
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

/** Writes outbox rows (one statement) unless their keys exist: a second delivery or event of the payment adds nothing. */
async function addEffects({ tx, payment, now }: PaymentContext, effects: Effect[]): Promise<void> {
  const payload = JSON.stringify(paymentEffect(payment));
  await tx
    .insertInto('outbox')
    .orIgnore()
    .values(
      effects.map(({ kind, idempotencyKey, dependsOnKey }) => ({
        idempotency_key: idempotencyKey,
        kind,
        payload,
        status: 'pending' as const,
        attempts: 0,
        next_attempt_at: now,
        created_at: now,
        depends_on_key: dependsOnKey ?? null,
      })),
    )
    .execute();
}

function paymentEffect(payment: PaymentRow): PaymentEffect {
  return {
    provider: payment.provider,
    paymentId: payment.payment_id,
    userId: payment.user_id,
    courseId: payment.course_id,
    amount: payment.amount === null ? null : Number(payment.amount),
    currency: payment.currency,
    email: payment.email,
  };
}

async function grantCourse(context: PaymentContext): Promise<void> {
  const { tx, payment, now } = context;
  await tx
    .insertInto('orders')
    .orIgnore()
    .values({
      provider: payment.provider,
      payment_id: payment.payment_id,
      user_id: payment.user_id,
      course_id: payment.course_id,
      amount: payment.amount,
      currency: payment.currency,
      status: 'paid',
      created_at: now,
      updated_at: now,
    })
    .execute();

  if (payment.user_id !== null && payment.course_id !== null) {
    const enrolled = await tx
      .insertInto('enrollments')
      .orIgnore()
      .values({
        user_id: payment.user_id,
        course_id: payment.course_id,
        status: 'active',
        provider: payment.provider,
        payment_id: payment.payment_id,
        created_at: now,
        updated_at: now,
      })
      .executeTakeFirst();
    if (enrolled.numInsertedOrUpdatedRows === 0n) {
      // Bought again after a refund: the new payment re-activates the enrollment.
      await tx
        .updateTable('enrollments')
        .set({ status: 'active', provider: payment.provider, payment_id: payment.payment_id, updated_at: now })
        .where('user_id', '=', payment.user_id)
        .where('course_id', '=', payment.course_id)
        .where('status', '=', 'revoked')
        .execute();
    }
  }

  await addEffects(context, [
    { kind: COURSE_EFFECTS.receipt, idempotencyKey: receiptKey(payment.provider, payment.payment_id) },
    { kind: COURSE_EFFECTS.fulfilment, idempotencyKey: fulfilmentKey(payment.provider, payment.payment_id) },
  ]);
}

async function revokeCourse(context: PaymentContext): Promise<void> {
  const { tx, payment, now } = context;
  await tx
    .updateTable('orders')
    .set({ status: 'refunded', updated_at: now })
    .where('provider', '=', payment.provider)
    .where('payment_id', '=', payment.payment_id)
    .execute();
  // Only what this payment granted: a later purchase of the same course stays active.
  await tx
    .updateTable('enrollments')
    .set({ status: 'revoked', updated_at: now })
    .where('provider', '=', payment.provider)
    .where('payment_id', '=', payment.payment_id)
    .where('status', '=', 'active')
    .execute();

  // Only a fulfilment that was requested is cancelled (a refund seen before any capture has none),
  // and never before it: the cancellation waits until the fulfilment row is final. No second receipt.
  const fulfilment = fulfilmentKey(payment.provider, payment.payment_id);
  const requested = await tx.selectFrom('outbox').select('id').where('idempotency_key', '=', fulfilment).executeTakeFirst();
  if (requested) await addEffects(context, [{ kind: COURSE_EFFECTS.cancellation, idempotencyKey: cancellationKey(payment.provider, payment.payment_id), dependsOnKey: fulfilment }]);
}

/**
 * The reference business: a course platform. A captured payment creates one order, one enrollment
 * per (user, course), one receipt and one fulfilment request in the outbox; a full refund revokes
 * what the payment granted and, when a fulfilment was requested, asks for its cancellation.
 * Unique keys make every write idempotent on its own.
 */
export const coursePlatform: PaymentHandlers = {
  captured: [grantCourse],
  refunded: [revokeCourse],
};
