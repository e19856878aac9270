import type { Kysely } from 'kysely';
import type { DbTime, InboxDatabase } from './schema.js';
import type { BusinessTransaction } from './store.js';

/** The payment an event is about, as recorded with the event. */
export interface PaymentRef {
  provider: string;
  paymentId: string;
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
