import type { Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';
import { CREATE_WHOLE_PAYLOAD_FUNCTION_V1 } from '../postgres/whole-payload-function-v1.js';

/**
 * PostgreSQL records a batch's events and bodies in one statement, which commits by itself: the
 * size of each stored payload is compared inside it, by this function, whose error fails the
 * statement whole (postgres/record-in-one-statement.ts). Other stores compare in the record's
 * transaction.
 */
export function wholePayloadCheck(types: ColumnTypes): Migration {
  return {
    async up(db) {
      if (types.dialect !== 'postgres') return;
      await CREATE_WHOLE_PAYLOAD_FUNCTION_V1.execute(db);
    },
  };
}
