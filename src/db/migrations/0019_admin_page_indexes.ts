import type { Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';

/**
 * The indexes of the dashboard's reconcile runs, and on PostgreSQL the event list's time index.
 */
export function adminPageIndexes(types: ColumnTypes): Migration {
  return {
    async up(db) {
      // The dashboard pages through runs newest first by (started_at, id), of all providers or one.
      await db.schema.createIndex('ix_reconcile_runs_started').on('reconcile_runs').columns(['started_at', 'id']).execute();
      await db.schema.createIndex('ix_reconcile_runs_provider_started').on('reconcile_runs').columns(['provider', 'started_at', 'id']).execute();
      // PostgreSQL prices an index scan by its first column's correlation with the table order, cut
      // for an index of several columns: on (created_at, id) a time window's range looked dearer than
      // reading the whole table, and a text search in a 24-hour window read all of it. On
      // (created_at) alone the range is priced as the ordered read it is; rows of one time are put
      // in id order by an incremental sort of those few rows. MariaDB and SQLite keep (created_at,
      // id): their secondary indexes end in the primary key anyway, so they lose nothing.
      if (types.dialect === 'postgres') {
        await db.schema.createIndex('ix_webhook_events_created_at').on('webhook_events').column('created_at').execute();
        await db.schema.dropIndex('ix_webhook_events_created').execute();
      }
    },
  };
}
