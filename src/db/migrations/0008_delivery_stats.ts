import type { Migration } from 'kysely';
import { createTable, type ColumnTypes } from '../column-types.js';

/**
 * The overview's figures, written as deliveries and checks happen: deliveries and acknowledgement
 * times per minute, the latest refused deliveries, and a sample of the pipeline per minute.
 */
export function deliveryStats(types: ColumnTypes): Migration {
  return {
    async up(db) {
      // One row per minute, provider and result, added to by every process: the overview sums them.
      await createTable(db.schema, types, 'delivery_stats')
        .addColumn('minute', types.timestamp, (c) => c.notNull())
        .addColumn('provider', types.shortText, (c) => c.notNull())
        .addColumn('result', types.shortText, (c) => c.notNull())
        .addColumn('deliveries', types.bigint, (c) => c.notNull().defaultTo(0))
        .addColumn('ack_ms_total', types.bigint, (c) => c.notNull().defaultTo(0))
        .addColumn('ack_ms_max', types.bigint, (c) => c.notNull().defaultTo(0))
        .addUniqueConstraint('uq_delivery_stats_minute', ['minute', 'provider', 'result'])
        .execute();
      // A ring of slots, overwritten in turn: a flood of forged deliveries cannot grow it.
      await createTable(db.schema, types, 'rejected_deliveries')
        .addColumn('slot', 'integer', (c) => c.notNull())
        .addColumn('rejected_at', types.timestamp, (c) => c.notNull())
        .addColumn('provider', types.shortText, (c) => c.notNull())
        .addColumn('status_code', 'integer', (c) => c.notNull())
        .addColumn('reason', types.longText, (c) => c.notNull())
        .addColumn('remote_address', types.shortText)
        .addColumn('body_bytes', types.bigint)
        .addUniqueConstraint('uq_rejected_deliveries_slot', ['slot'])
        .execute();
      await db.schema.createIndex('ix_rejected_deliveries_at').on('rejected_deliveries').column('rejected_at').execute();
      // One sample a minute of what needs attention, by whichever process writes it first.
      await createTable(db.schema, types, 'pipeline_samples')
        .addColumn('minute', types.timestamp, (c) => c.notNull())
        .addColumn('due', types.bigint, (c) => c.notNull())
        .addColumn('oldest_pending_seconds', types.bigint)
        .addColumn('failed', types.bigint, (c) => c.notNull())
        .addColumn('stuck', types.bigint, (c) => c.notNull())
        .addColumn('outbox_failed', types.bigint, (c) => c.notNull())
        .addUniqueConstraint('uq_pipeline_samples_minute', ['minute'])
        .execute();
    },
  };
}
