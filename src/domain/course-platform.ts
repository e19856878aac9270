import type { PaymentContext, PaymentHandlers } from './handlers.js';

/**
 * The reference business: a course platform. A captured payment creates one order, one enrollment
 * per (user, course) and one receipt in the outbox; a full refund revokes what the payment granted.
 * Unique keys make every write idempotent on its own.
 */
export function receiptKey(provider: string, paymentId: string): string {
  return `receipt:${provider}:${paymentId}`;
}

async function grantCourse({ tx, payment, now }: PaymentContext): Promise<void> {
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

  await tx
    .insertInto('outbox')
    .orIgnore()
    .values({
      idempotency_key: receiptKey(payment.provider, payment.payment_id),
      kind: 'receipt_email',
      payload: JSON.stringify({
        provider: payment.provider,
        paymentId: payment.payment_id,
        userId: payment.user_id,
        courseId: payment.course_id,
        amount: payment.amount,
        currency: payment.currency,
        email: payment.email,
      }),
      status: 'pending',
      attempts: 0,
      next_attempt_at: now,
      created_at: now,
    })
    .execute();
}

async function revokeCourse({ tx, payment, now }: PaymentContext): Promise<void> {
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
}

export const coursePlatform: PaymentHandlers = {
  captured: [grantCourse],
  refunded: [revokeCourse],
};
