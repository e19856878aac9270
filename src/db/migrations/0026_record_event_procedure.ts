import { sql, type Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';
import { createRecordEventProcedureV1, RECORD_EVENT_PROCEDURE } from '../mysql/record-event-procedure-v1.js';

/**
 * MySQL and MariaDB record an event that comes alone with one round trip instead of four (BEGIN,
 * two inserts, COMMIT): the procedure runs the same transaction on the server
 * (mysql/record-by-call.ts).
 */
export function recordEventProcedure(types: ColumnTypes): Migration {
  return {
    async up(db) {
      if (types.dialect !== 'mysql') return;
      await sql`drop procedure if exists ${sql.raw(RECORD_EVENT_PROCEDURE)}`.execute(db);
      await createRecordEventProcedureV1(types).execute(db);
    },
  };
}
