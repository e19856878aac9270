import type { BusinessTransaction, Lease } from './inbox-store.js';

/** The payment an event is about, as recorded with the event. */
export interface PaymentRef {
  provider: string;
  paymentId: string;
}

/**
 * Frees the payments held by `leases`, each only while the lease's own token still holds it (one
 * statement for all). True when every lease that holds a payment still did.
 */
export async function releasePaymentLeases(tx: BusinessTransaction, leases: Lease[]): Promise<boolean> {
  const holders = leases.filter((lease): lease is Lease & { payment: PaymentRef } => lease.payment !== null);
  if (holders.length === 0) return true;
  const released = await tx
    .updateTable('payment_leases')
    .set({ event_row_id: null, lease_token: null, lease_expires_at: null })
    .where((eb) => eb.or(holders.map(({ payment, token }) => eb.and([eb('provider', '=', payment.provider), eb('payment_id', '=', payment.paymentId), eb('lease_token', '=', token)]))))
    .executeTakeFirst();
  return Number(released.numUpdatedRows) === holders.length;
}
