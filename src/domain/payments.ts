import type { Selectable } from 'kysely';
import type { DbTime, PaymentsTable } from '../store/schema.js';
import type { BusinessTransaction } from '../store/store.js';
import { statesBefore, type PaymentEvent } from './payment-event.js';

export type PaymentRow = Selectable<PaymentsTable>;

export interface PaymentChange {
  /** The event moved the payment forward (or created it). */
  applied: boolean;
  /** The event filled in details the payment lacked (user, course, amount, ...). */
  enriched: boolean;
  /** The payment as it stands after the event, inside the same transaction. */
  payment: PaymentRow;
}

/**
 * Applies a payment event forward-only (DESIGN.md invariant 4). Every step is a single conditional
 * statement, so concurrent events of one payment serialise on its row and the highest state wins
 * whatever the delivery order. A stale event still completes missing details: a late event may be
 * the only one that carries the customer's metadata.
 */
export async function advancePayment(tx: BusinessTransaction, provider: string, event: PaymentEvent, now: DbTime): Promise<PaymentChange> {
  const inserted = await tx
    .insertInto('payments')
    .orIgnore()
    .values({
      provider,
      payment_id: event.paymentId,
      status: event.state,
      amount: event.amountMinor,
      currency: event.currency,
      user_id: event.userId,
      course_id: event.courseId,
      email: event.email,
      created_at: now,
      updated_at: now,
    })
    .executeTakeFirst();

  let applied = inserted.numInsertedOrUpdatedRows === 1n;
  let enriched = false;
  if (!applied) {
    const earlier = statesBefore(event.state);
    if (earlier.length > 0) {
      const moved = await tx
        .updateTable('payments')
        .set({ status: event.state, updated_at: now })
        .where('provider', '=', provider)
        .where('payment_id', '=', event.paymentId)
        .where('status', 'in', earlier)
        .executeTakeFirst();
      applied = moved.numUpdatedRows === 1n;
    }
    enriched = await completeDetails(tx, provider, event, now);
  }

  const payment = await tx.selectFrom('payments').selectAll().where('provider', '=', provider).where('payment_id', '=', event.paymentId).executeTakeFirstOrThrow();
  return { applied, enriched, payment };
}

async function completeDetails(tx: BusinessTransaction, provider: string, event: PaymentEvent, now: DbTime): Promise<boolean> {
  const details = {
    user_id: event.userId,
    course_id: event.courseId,
    email: event.email,
    amount: event.amountMinor,
    currency: event.currency,
  } as const;
  const known = (Object.keys(details) as Array<keyof typeof details>).filter((column) => details[column] !== null);
  if (known.length === 0) return false;

  const filled = await tx
    .updateTable('payments')
    .set((eb) => {
      const set: Record<string, unknown> = { updated_at: now };
      for (const column of known) set[column] = eb.fn.coalesce(column, eb.val(details[column]));
      return set;
    })
    .where('provider', '=', provider)
    .where('payment_id', '=', event.paymentId)
    .where((eb) => eb.or(known.map((column) => eb(column, 'is', null))))
    .executeTakeFirst();
  return filled.numUpdatedRows > 0n;
}
