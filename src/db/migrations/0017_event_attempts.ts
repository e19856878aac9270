import type { Migration } from 'kysely';
import { createTable, type ColumnTypes } from '../column-types.js';

/**
 * Attempts that did not succeed, one row each, written only where a failure or a lost lease is
 * written anyway; the attempt that succeeds is read from the event row (claimed_at, processed_at),
 * so processing an event costs no more statements than before.
 */
export function eventAttempts(types: ColumnTypes): Migration {
  return {
    async up(db) {
      // Set by the claim's own UPDATE: when the current (or last) attempt started.
      await db.schema.alterTable('webhook_events').addColumn('claimed_at', types.timestamp).execute();
      await createTable(db.schema, types, 'event_attempts')
        .addColumn('event_row_id', types.bigint, (c) => c.notNull())
        .addColumn('attempt', 'integer', (c) => c.notNull())
        .addColumn('owner', types.key)
        .addColumn('outcome', types.shortText, (c) => c.notNull())
        .addColumn('error', types.longText)
        .addColumn('started_at', types.timestamp)
        .addColumn('ended_at', types.timestamp, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('ix_event_attempts_event').on('event_attempts').columns(['event_row_id', 'id']).execute();
    },
  };
}
