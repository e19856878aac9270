import type { Migration, RawBuilder } from 'kysely';
import type { ColumnTypes } from '../column-types.js';

/**
 * An outbox row's dispatch: the lease of the dispatcher sending it, the row it waits for
 * (`depends_on_key`) and what its delivery answered.
 */
export function outboxDispatch(types: ColumnTypes): Migration {
  return {
    async up(db) {
      // One column per statement: SQLite's ALTER TABLE adds a single column at a time.
      const columns: Array<[string, RawBuilder<unknown>]> = [
        ['lease_owner', types.key],
        ['lease_token', types.shortText],
        ['lease_expires_at', types.timestamp],
        ['depends_on_key', types.key],
        ['outcome', types.longText],
      ];
      for (const [name, type] of columns) await db.schema.alterTable('outbox').addColumn(name, type).execute();
    },
  };
}
