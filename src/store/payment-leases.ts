import type { Kysely } from 'kysely';
import type { DbTime, InboxDatabase } from './schema.js';
import type { BusinessTransaction } from './store.js';

/** The payment an event is about, as recorded with the event. */
export interface PaymentRef {
  provider: string;
  paymentId: string;
}

/**
 * Creates the payment's lease row if missing. Runs on its own, before the claim transaction: an
 * INSERT IGNORE that meets an existing row takes a shared lock, and two claims each holding one while
 * waiting to update the row would deadlock.
 */
export async function ensurePaymentLeaseRow(db: Kysely<InboxDatabase>, payment: PaymentRef): Promise<void> {
  await db.insertInto('payment_leases').orIgnore().values({ provider: payment.provider, payment_id: payment.paymentId }).execute();
}

/**
 * Takes the payment's lease for one event when it is free (never taken, released, or expired). A
 * single conditional UPDATE: of two concurrent claims for one payment, the second waits for the
 * first's row lock and then sees the lease taken.
 */
export async function takePaymentLease(
  tx: BusinessTransaction,
  payment: PaymentRef,
  holder: { eventRowId: number; token: string; expiresAt: DbTime },
  now: DbTime,
): Promise<boolean> {
  const taken = await tx
    .updateTable('payment_leases')
    .set({ event_row_id: holder.eventRowId, lease_token: holder.token, lease_expires_at: holder.expiresAt })
    .where('provider', '=', payment.provider)
    .where('payment_id', '=', payment.paymentId)
    .where((eb) => eb.or([eb('lease_token', 'is', null), eb('lease_expires_at', '<=', now)]))
    .executeTakeFirst();
  return taken.numUpdatedRows === 1n;
}

/** Frees the payment's lease if `token` still holds it; false when it does not (expired and taken). */
export async function releasePaymentLease(tx: BusinessTransaction, payment: PaymentRef, token: string): Promise<boolean> {
  const released = await tx
    .updateTable('payment_leases')
    .set({ event_row_id: null, lease_token: null, lease_expires_at: null })
    .where('provider', '=', payment.provider)
    .where('payment_id', '=', payment.paymentId)
    .where('lease_token', '=', token)
    .executeTakeFirst();
  return released.numUpdatedRows === 1n;
}
