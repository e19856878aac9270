import type { Migration } from 'kysely';

/**
 * A payment is held by a row lock of the transaction that applies one of its events (see
 * store/payment-locks.ts), which the database frees with the transaction; nothing is written to
 * hold or free it any more. A process of an earlier version can no longer complete an event once
 * this has run: its completion rolls back, and the event is retried by a current one.
 */
export function paymentLocks(): Migration {
  return {
    async up(db) {
      for (const column of ['event_row_id', 'lease_token', 'lease_expires_at']) await db.schema.alterTable('payment_leases').dropColumn(column).execute();
    },
  };
}
