import type { ExpressionBuilder, Kysely } from 'kysely';
import { groupBy } from '../db/batcher.js';
import type { DbTime, InboxDatabase } from '../db/schema.js';
import type { BusinessTransaction, Lease, PaymentRef } from './inbox-store.js';

export const paymentKey = (provider: string, paymentId: string) => `${provider}\u0000${paymentId}`;

/** Matches the rows of `payments` (leases, events or payments), grouped by provider so each group is an index range. */
export function wherePayments(payments: PaymentRef[]) {
  return (eb: ExpressionBuilder<InboxDatabase, 'payment_leases' | 'webhook_events' | 'payments'>) =>
    eb.or(
      [...groupBy(payments, (p) => p.provider)].map(([provider, group]) =>
        eb.and([
          eb('provider', '=', provider),
          eb(
            'payment_id',
            'in',
            group.map((p) => p.paymentId),
          ),
        ]),
      ),
    );
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
    .where((eb) =>
      eb.or(holders.map(({ payment, token }) => eb.and([eb('provider', '=', payment.provider), eb('payment_id', '=', payment.paymentId), eb('lease_token', '=', token)]))),
    )
    .executeTakeFirst();
  return Number(released.numUpdatedRows) === holders.length;
}

/** For each payment, its event due the longest (one that waited while another held the payment). */
export async function nextDueEvents(db: Kysely<InboxDatabase>, payments: PaymentRef[], now: DbTime): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('webhook_events')
    .select((eb) => ['provider', 'payment_id', eb.fn.min('id').as('id')])
    .where(wherePayments(payments))
    .where('next_attempt_at', '<=', now)
    .groupBy(['provider', 'payment_id'])
    .execute();
  return new Map(rows.map((row) => [paymentKey(row.provider, row.payment_id!), Number(row.id)]));
}
