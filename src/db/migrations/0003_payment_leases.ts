import type { Migration } from 'kysely';
import { createTable, type ColumnTypes } from '../column-types.js';

/**
 * Events name the payment they are about, so that the events of one payment are processed one at a
 * time: a row of `payment_leases` held a payment for the worker processing one of its events
 * (migration 0021 leaves that to row locks).
 */
export function paymentLeases(types: ColumnTypes): Migration {
  return {
    async up(db) {
      // Nullable and appended: instant on InnoDB, plain ADD COLUMN on SQLite. Older events stay NULL.
      await db.schema.alterTable('webhook_events').addColumn('payment_id', types.key).execute();
      await db.schema.createIndex('ix_webhook_events_payment').on('webhook_events').columns(['provider', 'payment_id']).execute();
      await createTable(db.schema, types, 'payment_leases')
        .addColumn('provider', types.shortText, (c) => c.notNull())
        .addColumn('payment_id', types.key, (c) => c.notNull())
        .addColumn('event_row_id', types.bigint)
        .addColumn('lease_token', types.shortText)
        .addColumn('lease_expires_at', types.timestamp)
        .addUniqueConstraint('uq_payment_leases_payment', ['provider', 'payment_id'])
        .execute();
    },
  };
}
