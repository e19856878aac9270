import type { Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';

/**
 * A payment keeps the merchant's metadata that its provider sent.
 */
export function paymentMetadata(types: ColumnTypes): Migration {
  return {
    async up(db) {
      await db.schema.alterTable('payments').addColumn('metadata', types.longText).execute();
    },
  };
}
