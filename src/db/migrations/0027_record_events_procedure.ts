import { sql, type Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';
import { createRecordEventsProcedureV1, RECORD_EVENTS_PROCEDURE } from '../mysql/record-events-procedure-v1.js';
import { recordsBatchesByProcedure } from '../mysql/server-version.js';

/**
 * A record batch in one round trip instead of four (mysql/record-by-call.ts). The events' keys travel
 * as JSON, read with JSON_TABLE; their payloads and headers as one string of bytes, cut by each
 * event's offsets, so no payload is escaped into JSON on the way. The rows this transaction inserted
 * are the batch's rows without a body: every other writer inserts a row and its body in one
 * transaction, and the rows of one not yet committed are not read here. Only MariaDB 10.6 and later
 * get it (recordsBatchesByProcedure); elsewhere batches stay transactions.
 */
export function recordEventsProcedure(types: ColumnTypes): Migration {
  return {
    async up(db) {
      if (types.dialect !== 'mysql') return;
      const { rows } = await sql<{ version: string }>`select version() as version`.execute(db);
      await sql`drop procedure if exists ${sql.raw(RECORD_EVENTS_PROCEDURE)}`.execute(db);
      if (!recordsBatchesByProcedure(rows[0]?.version ?? '')) return;
      await createRecordEventsProcedureV1(types).execute(db);
    },
  };
}
