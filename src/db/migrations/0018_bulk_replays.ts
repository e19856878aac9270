import type { Migration } from 'kysely';
import { createTable, type ColumnTypes } from '../column-types.js';

/**
 * Bulk replays run in one serve process and are read and cancelled from any: their progress, the
 * cancel request and the runner's heartbeat live here, not in a process's memory.
 */
export function bulkReplays(types: ColumnTypes): Migration {
  return {
    async up(db) {
      await createTable(db.schema, types, 'bulk_replays')
        .addColumn('job_key', types.key, (c) => c.notNull())
        .addColumn('actor', types.key, (c) => c.notNull())
        .addColumn('reason', types.longText, (c) => c.notNull())
        .addColumn('filter', types.longText, (c) => c.notNull())
        .addColumn('total', 'integer', (c) => c.notNull())
        .addColumn('done', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('processed', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('failed', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('skipped', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('state', types.shortText, (c) => c.notNull())
        .addColumn('error', types.longText)
        .addColumn('cancel_requested', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('runner', types.key, (c) => c.notNull())
        .addColumn('heartbeat_at', types.timestamp, (c) => c.notNull())
        .addColumn('started_at', types.timestamp, (c) => c.notNull())
        .addColumn('finished_at', types.timestamp)
        .addUniqueConstraint('uq_bulk_replays_job_key', ['job_key'])
        .execute();
      await db.schema.createIndex('ix_bulk_replays_started').on('bulk_replays').columns(['started_at', 'id']).execute();
    },
  };
}
