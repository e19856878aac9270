import type { Migration } from 'kysely';
import { createTable, type ColumnTypes } from '../column-types.js';

/**
 * Dashboard sign-ins kept where every process reads them: a session is a row, so signing out (its row
 * deleted) ends it in every process at once; the cookie carries the session's id, the row only its
 * hash. Refused tokens are kept per client address, so the sign-in limit holds across processes.
 */
export function adminSessions(types: ColumnTypes): Migration {
  return {
    async up(db) {
      await createTable(db.schema, types, 'admin_sessions')
        .addColumn('session_hash', types.key, (c) => c.notNull())
        .addColumn('actor', types.key, (c) => c.notNull())
        .addColumn('created_at', types.timestamp, (c) => c.notNull())
        .addColumn('expires_at', types.timestamp, (c) => c.notNull())
        .addColumn('last_seen_at', types.timestamp, (c) => c.notNull())
        .addUniqueConstraint('uq_admin_sessions_session_hash', ['session_hash'])
        .execute();
      await createTable(db.schema, types, 'admin_sign_in_failures')
        .addColumn('client', types.key, (c) => c.notNull())
        .addColumn('failed_at', types.timestamp, (c) => c.notNull())
        .execute();
      await db.schema.createIndex('ix_admin_sign_in_failures_client').on('admin_sign_in_failures').columns(['client', 'failed_at']).execute();
    },
  };
}
