import type { Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';

/**
 * An outbox row may name an ordering key: the rows of one key are sent in the order they were
 * written.
 */
export function outboxOrdering(types: ColumnTypes): Migration {
  return {
    async up(db) {
      await db.schema.alterTable('outbox').addColumn('ordering_key', types.key).execute();
      // The dispatcher asks, for each due row with a key, whether an earlier row of its key is unfinished.
      await db.schema.createIndex('ix_outbox_ordering').on('outbox').columns(['ordering_key', 'id']).execute();
    },
  };
}
