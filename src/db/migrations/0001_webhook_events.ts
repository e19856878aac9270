import type { Migration } from 'kysely';
import { createTable, type ColumnTypes } from '../column-types.js';

/**
 * Every event received, unique by its provider's key (provider, event_id): its payload and headers,
 * its status, the lease of the worker processing it and when it is due.
 */
export function webhookEvents(types: ColumnTypes): Migration {
  return {
    async up(db) {
      await createTable(db.schema, types, 'webhook_events')
        .addColumn('provider', types.shortText, (c) => c.notNull())
        .addColumn('event_id', types.key, (c) => c.notNull())
        .addColumn('event_type', types.key, (c) => c.notNull())
        .addColumn('payload', types.longText, (c) => c.notNull())
        .addColumn('headers', types.longText, (c) => c.notNull())
        .addColumn('status', types.shortText, (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('lease_owner', types.key)
        .addColumn('lease_token', types.shortText)
        .addColumn('lease_expires_at', types.timestamp)
        .addColumn('next_attempt_at', types.timestamp)
        .addColumn('last_error', types.longText)
        .addColumn('outcome', types.longText)
        .addColumn('created_at', types.timestamp, (c) => c.notNull())
        .addColumn('processed_at', types.timestamp)
        .addUniqueConstraint('uq_webhook_events_provider_event', ['provider', 'event_id'])
        .execute();
      await db.schema.createIndex('ix_webhook_events_due').on('webhook_events').column('next_attempt_at').execute();
      await db.schema.createIndex('ix_webhook_events_status').on('webhook_events').columns(['status', 'created_at']).execute();
    },
  };
}
