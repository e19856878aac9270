import { sql, type Kysely } from 'kysely';
import type { RecordPath } from '../recording/record-path.js';
import { returningBatch } from '../recording/returning.js';
import type { InboxDatabase } from '../schema.js';
import { callBatch, recordByCall } from './record-by-call.js';
import { transactionBatch } from './record-in-transaction.js';
import { RECORD_EVENTS_PROCEDURE } from './record-events-procedure-v1.js';
import { hasInsertReturning } from './server-version.js';

/** Whether the server runs INSERT ... RETURNING (MariaDB 10.5 and later; MySQL does not). */
export async function runsInsertReturning(db: Kysely<InboxDatabase>): Promise<boolean> {
  const { rows } = await sql<{ version: string }>`select version() as version`.execute(db);
  return hasInsertReturning(rows[0]?.version ?? '');
}

/** Whether the database has RECORD_EVENTS_PROCEDURE: migration 0027 created it where the server can run it. */
export async function hasRecordEventsProcedure(db: Kysely<InboxDatabase>): Promise<boolean> {
  const { rows } = await sql<{
    n: number | string;
  }>`select count(*) as n from information_schema.routines where routine_schema = database() and routine_name = ${RECORD_EVENTS_PROCEDURE}`.execute(db);
  return Number(rows[0]?.n) > 0;
}

/**
 * MySQL and MariaDB: an event alone is one call of the procedure of migration 0026, one round trip
 * for the transaction that would otherwise take four. A batch is one call of the batch procedure
 * where the database has it, else the statements with RETURNING where the server runs them, else a
 * transaction that reads before it inserts.
 */
export function mysqlRecordPath(db: Kysely<InboxDatabase>): RecordPath {
  return {
    recordOne: (request) => recordByCall(db, request),
    async batchInsert() {
      if (await hasRecordEventsProcedure(db)) return callBatch(db);
      return (await runsInsertReturning(db)) ? returningBatch(db) : transactionBatch(db);
    },
  };
}
