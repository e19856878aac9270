import type { Selectable } from 'kysely';
import { paymentKey, wherePayments } from '../store/processing-batches.js';
import type { DbTime, PaymentsTable } from '../store/schema.js';
import type { BusinessTransaction, CompletionBatch } from '../store/store.js';
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

type Details = Pick<PaymentRow, 'user_id' | 'course_id' | 'email' | 'amount' | 'currency'>;

/**
 * Applies a payment event forward-only (DESIGN.md invariant 4). Events of one payment are processed
 * one at a time (the payment lease), so the payment is read once and written at most once; the write
 * is still conditional (an earlier state, a missing detail), so that even concurrent writers could
 * only move the payment forward and fill what is empty. A stale event still completes missing
 * details: a late event may be the only one that carries the customer's metadata.
 */
export async function advancePayment(tx: BusinessTransaction, provider: string, event: PaymentEvent, now: DbTime, batch?: CompletionBatch): Promise<PaymentChange> {
  const key = { provider, payment_id: event.paymentId };
  const details: Details = { user_id: event.userId, course_id: event.courseId, email: event.email, amount: event.amountMinor, currency: event.currency };
  let current = await readPaymentOfBatch(tx, key, batch);
  if (!current) {
    const values = { ...key, ...details, status: event.state, created_at: now, updated_at: now };
    const inserted = await tx.insertInto('payments').orIgnore().values(values).executeTakeFirst();
    if (inserted.numInsertedOrUpdatedRows === 1n) return { applied: true, enriched: false, payment: { id: Number(inserted.insertId), ...values } };
    // Created by a writer outside the payment's lease (an operator's tool) since the read.
    current = (await readPayment(tx, key))!;
  }

  const earlier = statesBefore(event.state);
  const applied = earlier.includes(current.status);
  const missing = (Object.keys(details) as Array<keyof Details>).filter((column) => details[column] !== null && current[column] === null);
  if (!applied && missing.length === 0) return { applied, enriched: false, payment: current };

  await tx
    .updateTable('payments')
    .set((eb) => {
      const set: Record<string, unknown> = { updated_at: now };
      if (applied) set.status = eb.case().when('status', 'in', earlier).then(event.state).else(eb.ref('status')).end();
      for (const column of missing) set[column] = eb.fn.coalesce(column, eb.val(details[column]));
      return set;
    })
    .where('provider', '=', provider)
    .where('payment_id', '=', event.paymentId)
    .execute();
  const filled = Object.fromEntries(missing.map((column) => [column, details[column]]));
  return { applied, enriched: missing.length > 0, payment: { ...current, ...filled, ...(applied ? { status: event.state } : {}), updated_at: now } };
}

function readPayment(tx: BusinessTransaction, key: { provider: string; payment_id: string }): Promise<PaymentRow | undefined> {
  return tx.selectFrom('payments').selectAll().where('provider', '=', key.provider).where('payment_id', '=', key.payment_id).executeTakeFirst();
}

const batchReads = new WeakMap<CompletionBatch, Promise<Map<string, PaymentRow>>>();

/**
 * The payment's row, read with those of every payment the batch completes (alone without a batch,
 * or when the batch does not name it): the first event of the batch reads them all in one statement
 * (read one by one, they were a fifth of processing's statements). Each payment has one event in
 * the batch, and only that event writes its row, so a row read ahead is still the row when its
 * event comes to use it.
 */
async function readPaymentOfBatch(tx: BusinessTransaction, key: { provider: string; payment_id: string }, batch?: CompletionBatch): Promise<PaymentRow | undefined> {
  if (!batch?.payments.some((p) => p.provider === key.provider && p.paymentId === key.payment_id)) return readPayment(tx, key);
  let rows = batchReads.get(batch);
  if (!rows) {
    rows = tx
      .selectFrom('payments')
      .selectAll()
      .where(wherePayments(batch.payments))
      .execute()
      .then((found) => new Map(found.map((row) => [paymentKey(row.provider, row.payment_id), row])));
    batchReads.set(batch, rows);
  }
  return (await rows).get(paymentKey(key.provider, key.payment_id));
}
