import type { Migration } from 'kysely';
import { createTable, type ColumnTypes } from '../column-types.js';

/**
 * Reconcile runs (a window of a provider's API read for events the inbox missed, resumed from its
 * cursor), and the locks that let one operator job of a name run at a time across processes.
 */
export function reconcileRuns(types: ColumnTypes): Migration {
  return {
    async up(db) {
      await createTable(db.schema, types, 'reconcile_runs')
        .addColumn('run_key', types.key, (c) => c.notNull())
        .addColumn('provider', types.shortText, (c) => c.notNull())
        .addColumn('window_start', types.timestamp, (c) => c.notNull())
        .addColumn('window_end', types.timestamp, (c) => c.notNull())
        .addColumn('dry_run', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('status', types.shortText, (c) => c.notNull())
        .addColumn('found', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('recorded', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('errors', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('cursor', types.longText)
        .addColumn('last_error', types.longText)
        .addColumn('started_at', types.timestamp, (c) => c.notNull())
        .addColumn('finished_at', types.timestamp)
        .addUniqueConstraint('uq_reconcile_runs_run_key', ['run_key'])
        .execute();
      await db.schema.createIndex('ix_reconcile_runs_provider').on('reconcile_runs').columns(['provider', 'status']).execute();
      await createTable(db.schema, types, 'operation_locks')
        .addColumn('name', types.key, (c) => c.notNull())
        .addColumn('owner', types.key, (c) => c.notNull())
        .addColumn('expires_at', types.timestamp, (c) => c.notNull())
        .addUniqueConstraint('uq_operation_locks_name', ['name'])
        .execute();
    },
  };
}
