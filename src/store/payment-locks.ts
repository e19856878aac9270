import type { ExpressionBuilder, Kysely } from 'kysely';
import { groupBy } from '../db/batcher.js';
import type { InboxDatabase } from '../db/schema.js';
import type { BusinessTransaction, PaymentRef } from './inbox-store.js';

/**
 * Events of one payment never run at the same time: the transaction that applies an event locks its
 * payment's row in `payment_leases` before any work, and holds it to its commit. A second event of the
 * payment, claimed by any worker, waits there for the first to commit (or roll back) instead of
 * being refused and offered again. Nothing is written to hold or free the lock: the database frees it
 * with the transaction, also when the worker dies.
 */

export const paymentKey = (provider: string, paymentId: string) => `${provider}\u0000${paymentId}`;

/** `payments` without repeats, in the order the locks are taken (by provider, then payment id). */
export function distinctPayments(payments: PaymentRef[]): PaymentRef[] {
  const byKey = new Map(payments.map((p) => [paymentKey(p.provider, p.paymentId), p]));
  return [...byKey.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([, p]) => p);
}

/**
 * Matches the rows of `payments` (lock rows, events or payments), grouped by provider so each group
 * is an index range. The statement's text must depend on little but the batch's size, so that a
 * statement prepared once (PostgreSQL's, SQLite's cache) serves the batches after it: each group's
 * list of ids is padded to a power of two by repeating its last id, and the groups come largest
 * first. Unpadded, every mix of sizes by provider was a text of its own.
 */
export function wherePayments(payments: PaymentRef[]) {
  const groups = [...groupBy(payments, (p) => p.provider)]
    .map(([provider, group]) => ({ provider, ids: paddedToPowerOfTwo([...new Set(group.map((p) => p.paymentId))]) }))
    .sort((a, b) => b.ids.length - a.ids.length);
  return (eb: ExpressionBuilder<InboxDatabase, 'payment_leases' | 'webhook_events' | 'payments'>) =>
    eb.or(groups.map(({ provider, ids }) => eb.and([eb('provider', '=', provider), eb('payment_id', 'in', ids)])));
}

/** `values` (at least one) followed by copies of its last value, up to the next power of two: an `IN` list means the same with repeats. */
export function paddedToPowerOfTwo<T>(values: T[]): T[] {
  const size = 2 ** Math.ceil(Math.log2(values.length));
  return values.concat(Array<T>(size - values.length).fill(values.at(-1)!));
}

/**
 * Makes the lock rows of `payments` that do not exist yet, outside any transaction (at the claim): a
 * row must exist to be locked, and an insert that meets an existing row inside the locking
 * transaction would take a shared lock first, which two transactions could each hold while waiting
 * for the other's.
 */
export async function ensurePaymentRows(db: Kysely<InboxDatabase>, payments: PaymentRef[]): Promise<void> {
  if (payments.length === 0) return;
  await db
    .insertInto('payment_leases')
    .orIgnore()
    .values(distinctPayments(payments).map((p) => ({ provider: p.provider, payment_id: p.paymentId })))
    .execute();
}

/**
 * Locks the rows of `payments` for the rest of `tx`, in one statement, in key order: every transaction
 * takes its locks in that order and before any other write, so two of them never each hold a lock the
 * other waits for. `lockingReads` false (one writer at a time, as SQLite): the transactions already
 * run one after another, and there is nothing to lock.
 */
export async function lockPayments(tx: BusinessTransaction, payments: PaymentRef[], lockingReads: boolean): Promise<void> {
  if (!lockingReads || payments.length === 0) return;
  const locked = await tx.selectFrom('payment_leases').select('id').where(wherePayments(payments)).orderBy('provider').orderBy('payment_id').forUpdate().execute();
  // A missing row would leave its payment unlocked: fail the attempt instead (its next claim makes the row).
  if (locked.length !== distinctPayments(payments).length) throw new Error('a payment lock row is missing; the event is claimed again once it exists');
}
