import type { Migration } from 'kysely';
import { createTable, type ColumnTypes } from '../column-types.js';

/**
 * `webhook-inbox copy` keeps here, in the target, how far it has copied each table from a source:
 * written in the transaction of each batch, so a copy cut short resumes where it stopped.
 */
export function copyProgress(types: ColumnTypes): Migration {
  return {
    async up(db) {
      await createTable(db.schema, types, 'copy_progress')
        .addColumn('source', types.shortText, (c) => c.notNull())
        .addColumn('table_name', types.shortText, (c) => c.notNull())
        .addColumn('last_id', types.bigint, (c) => c.notNull())
        .addColumn('copied', types.bigint, (c) => c.notNull())
        .addColumn('updated_at', types.timestamp, (c) => c.notNull())
        .addUniqueConstraint('uq_copy_progress_source_table', ['source', 'table_name'])
        .execute();
    },
  };
}
