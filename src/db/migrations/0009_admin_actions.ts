import type { Migration } from 'kysely';
import { createTable, type ColumnTypes } from '../column-types.js';

/**
 * The audit log of every change made through /admin: who, in which role, and why.
 */
export function adminActions(types: ColumnTypes): Migration {
  return {
    async up(db) {
      await createTable(db.schema, types, 'admin_actions')
        .addColumn('actor', types.key, (c) => c.notNull())
        .addColumn('role', types.shortText, (c) => c.notNull())
        .addColumn('action', types.shortText, (c) => c.notNull())
        .addColumn('target', types.key, (c) => c.notNull())
        .addColumn('reason', types.longText)
        .addColumn('result', types.longText)
        .addColumn('at', types.timestamp, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('ix_admin_actions_at').on('admin_actions').column('at').execute();
    },
  };
}
