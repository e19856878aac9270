import { CompiledQuery, type Kysely } from 'kysely';
import { bodyOf, newEventRow } from '../recording/new-event.js';
import { eventKey, type BatchInsert, type BatchOutcome, type RecordRequest, type RecordResult } from '../recording/record-path.js';
import { incompleteError } from '../recording/stored-whole.js';
import type { EventStatus, InboxDatabase } from '../schema.js';
import { RECORD_EVENT_PROCEDURE } from './record-event-procedure-v1.js';
import { RECORD_EVENTS_PROCEDURE } from './record-events-procedure-v1.js';

/**
 * The row RECORD_EVENT_PROCEDURE answers, and each of RECORD_EVENTS_PROCEDURE's, which also names its
 * event's keys and has a null id for an event the database neither inserted nor holds.
 */
interface RecordedByCall {
  id: number | string | null;
  outcome: 'recorded' | 'duplicate' | 'incomplete';
  status: EventStatus;
  stored_bytes: number | string | null;
}

const RECORD_EVENT_CALL = `call ${RECORD_EVENT_PROCEDURE}(?, ?, ?, ?, ?, ?, ?, ?, ?)`;

/**
 * One event, one call: the procedure inserts its row and body in a transaction of its own (migration
 * 0026), or answers the row or archived key that made it a duplicate, or nothing when the database
 * neither inserted the row nor holds one (RecordNotStoredError). A payload stored with another size
 * was rolled back there, and is refused here.
 */
export async function recordByCall(db: Kysely<InboxDatabase>, request: RecordRequest): Promise<RecordResult | null> {
  const row = newEventRow(request);
  const body = bodyOf(request.event);
  const parameters = [row.provider, row.event_id, row.event_type, row.created_at, row.payment_id, row.source, body.payload, body.headers, Buffer.byteLength(body.payload)];
  // A CALL answers its result sets and then its status: mysql2 gives them as one array.
  const { rows } = await db.executeQuery<unknown>(CompiledQuery.raw(RECORD_EVENT_CALL, parameters));
  const answer = (rows[0] as RecordedByCall[] | undefined)?.[0];
  if (!answer) return null;
  if (answer.outcome === 'incomplete') throw incompleteError(request.event, Number(answer.stored_bytes));
  return { outcome: answer.outcome, id: Number(answer.id), status: answer.status };
}

const RECORD_EVENTS_CALL = `call ${RECORD_EVENTS_PROCEDURE}(?, ?)`;

/**
 * The batch in one call of RECORD_EVENTS_PROCEDURE (MariaDB 10.6 and later, where migration 0027
 * created it): each event's fields as a JSON array, in the order the procedure reads them (its keys,
 * then where its payload starts in the bytes, counted from 1 as SQL's SUBSTRING does, and its
 * payload's and headers' sizes), then the bytes.
 */
export function callBatch(db: Kysely<InboxDatabase>): BatchInsert {
  return {
    kind: 'call',
    minBatch: 2,
    async insert(unique) {
      const bodies: Buffer[] = [];
      let at = 1;
      const events = unique.map((request) => {
        const row = newEventRow(request);
        const body = bodyOf(request.event);
        const payload = Buffer.from(body.payload);
        const headers = Buffer.from(body.headers);
        bodies.push(payload, headers);
        const fields = [row.provider, row.event_id, row.event_type, row.created_at, row.payment_id, row.source, at, payload.length, headers.length];
        at += payload.length + headers.length;
        return fields;
      });
      const { rows } = await db.executeQuery<unknown>(CompiledQuery.raw(RECORD_EVENTS_CALL, [JSON.stringify(events), Buffer.concat(bodies)]));
      const answers = (rows[0] as Array<RecordedByCall & { provider: string; event_id: string }> | undefined) ?? [];
      const incomplete = answers.find((answer) => answer.outcome === 'incomplete');
      if (incomplete) {
        const request = unique.find(({ event }) => event.provider === incomplete.provider && event.eventId === incomplete.event_id)!;
        throw incompleteError(request.event, Number(incomplete.stored_bytes));
      }
      const outcome: BatchOutcome = { created: new Map(), existing: new Map() };
      for (const answer of answers) {
        if (answer.id === null) continue;
        const key = eventKey(answer.provider, answer.event_id);
        if (answer.outcome === 'recorded') outcome.created.set(key, Number(answer.id));
        else outcome.existing.set(key, { id: Number(answer.id), status: answer.status });
      }
      return outcome;
    },
  };
}
