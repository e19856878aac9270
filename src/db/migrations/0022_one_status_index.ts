import type { Kysely, Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';

/**
 * Every write that moves an event's status updates each index holding `status`: (status,
 * created_at) of 0001 is a prefix of 0007's (status, created_at, id), which serves every query it
 * did, so it was kept up for nothing (on PostgreSQL, where any update of an indexed column writes
 * every index of the row, one index entry fewer per row version).
 */
export function oneStatusIndex(types: ColumnTypes): Migration {
  return {
    async up(db) {
      await dropEventIndex(db, types, 'ix_webhook_events_status');
    },
  };
}

/** Drops an index of webhook_events (migrations 0022 and 0023). */
export async function dropEventIndex(db: Kysely<unknown>, types: ColumnTypes, name: string): Promise<void> {
  const drop = db.schema.dropIndex(name);
  // MySQL names an index within its table; PostgreSQL and SQLite within the schema.
  await (types.dialect === 'mysql' ? drop.on('webhook_events') : drop).execute();
}
