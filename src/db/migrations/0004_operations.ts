import type { Migration } from 'kysely';
import { createTable, type ColumnTypes } from '../column-types.js';

/**
 * What operators do, kept: each replay of an event (who, why, and what it replaced), and the keys of
 * archived events, so that a redelivery of one is still a duplicate of the row it had.
 */
export function operations(types: ColumnTypes): Migration {
  return {
    async up(db) {
      await createTable(db.schema, types, 'event_replays')
        .addColumn('event_row_id', types.bigint, (c) => c.notNull())
        .addColumn('provider', types.shortText, (c) => c.notNull())
        .addColumn('event_id', types.key, (c) => c.notNull())
        .addColumn('actor', types.key, (c) => c.notNull())
        .addColumn('reason', types.longText, (c) => c.notNull())
        .addColumn('previous_status', types.shortText, (c) => c.notNull())
        .addColumn('previous_attempts', 'integer', (c) => c.notNull())
        .addColumn('previous_error', types.longText)
        .addColumn('result', types.longText)
        .addColumn('requested_at', types.timestamp, (c) => c.notNull())
        .addColumn('finished_at', types.timestamp)
        .execute();
      await db.schema.createIndex('ix_event_replays_event').on('event_replays').column('event_row_id').execute();
      await createTable(db.schema, types, 'archived_event_keys')
        .addColumn('provider', types.shortText, (c) => c.notNull())
        .addColumn('event_id', types.key, (c) => c.notNull())
        .addColumn('event_row_id', types.bigint, (c) => c.notNull())
        .addColumn('event_created_at', types.timestamp, (c) => c.notNull())
        .addColumn('archive_file', types.key, (c) => c.notNull())
        .addColumn('archived_at', types.timestamp, (c) => c.notNull())
        .addUniqueConstraint('uq_archived_event_keys_provider_event', ['provider', 'event_id'])
        .execute();
    },
  };
}
