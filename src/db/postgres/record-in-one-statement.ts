import { sql, type Kysely } from 'kysely';
import type { RecordNotStoredError } from '../../errors.js';
import { compiledRowsStatement } from '../compiled-statement.js';
import { outcomeOf } from '../recording/known-events.js';
import { bodyOf, NEW_EVENT_COLUMNS, newEventRow, type InsertedRow, type NewEventRow } from '../recording/new-event.js';
import { eventKey, type BatchInsert, type RecordRequest } from '../recording/record-path.js';
import { incompleteError, storedPayloadBytes } from '../recording/stored-whole.js';
import type { InboxDatabase } from '../schema.js';
import { PAYLOAD_NOT_WHOLE_STATE, WHOLE_PAYLOAD_FUNCTION } from './whole-payload-function-v1.js';

/** A new event's row and body as the one-statement record takes them, with its payload's size in bytes as sent. */
export type NewEventWithBody = NewEventRow & { payload: string; headers: string; payload_bytes: number };

function newEventWithBody(request: RecordRequest): NewEventWithBody {
  return { ...newEventRow(request), ...bodyOf(request.event), payload_bytes: Buffer.byteLength(request.event.payload) };
}

/** One new event's values, every one a parameter; the payload's size is typed, since the statement compares it. */
function newEventWithBodySource(db: Kysely<InboxDatabase>, value: <Column extends keyof NewEventWithBody>(column: Column) => NewEventWithBody[Column]) {
  return db.selectNoFrom((eb) => [
    ...NEW_EVENT_COLUMNS.filter((column) => column !== 'attempts').map((column) => eb.val(value(column)).as(column)),
    eb.val(value('payload')).as('payload'),
    eb.val(value('headers')).as('headers'),
    eb.cast(eb.val(value('payload_bytes')), 'integer').as('payload_bytes'),
  ]);
}

/**
 * With data-modifying CTEs, a record batch as one statement, which commits by itself. It inserts
 * every event not archived (a conflict on the event's key skips it), then the bodies of the rows it
 * inserted, and answers each new row with its stored payload's size through WHOLE_PAYLOAD_FUNCTION,
 * whose error on a size that differs fails the statement, rows and bodies together (migration 0025).
 */
export function newEventsWithBodiesInsert(db: Kysely<InboxDatabase>) {
  return compiledRowsStatement<NewEventWithBody, ReturnType<typeof newEventWithBodySource>, InsertedRow, InboxDatabase>(
    db,
    newEventWithBodySource,
    (db, source) =>
      db
        .with('input', () => source)
        .with('inserted', (qc) =>
          qc
            .insertInto('webhook_events')
            .orIgnore()
            .columns(NEW_EVENT_COLUMNS)
            .expression(
              qc
                .selectFrom('input')
                .select((eb) => NEW_EVENT_COLUMNS.map((column) => (column === 'attempts' ? sql.lit(0).as(column) : eb.ref(`input.${column}`).as(column))))
                .where((eb) =>
                  eb.not(
                    eb.exists(
                      eb
                        .selectFrom('archived_event_keys')
                        .select('archived_event_keys.id')
                        .whereRef('archived_event_keys.provider', '=', 'input.provider')
                        .whereRef('archived_event_keys.event_id', '=', 'input.event_id'),
                    ),
                  ),
                ),
            )
            .returning(['webhook_events.id', 'webhook_events.provider', 'webhook_events.event_id']),
        )
        .with('bodies', (qc) =>
          qc
            .insertInto('webhook_event_bodies')
            .columns(['event_row_id', 'payload', 'headers'])
            .expression(
              qc
                .selectFrom('inserted')
                .innerJoin('input', (join) => join.onRef('input.provider', '=', 'inserted.provider').onRef('input.event_id', '=', 'inserted.event_id'))
                .select(['inserted.id', 'input.payload', 'input.headers']),
            )
            .returning(['event_row_id', storedPayloadBytes]),
        )
        .selectFrom('inserted')
        .innerJoin('bodies', 'bodies.event_row_id', 'inserted.id')
        .innerJoin('input', (join) => join.onRef('input.provider', '=', 'inserted.provider').onRef('input.event_id', '=', 'inserted.event_id'))
        .select([
          'inserted.id',
          'inserted.provider',
          'inserted.event_id',
          sql<number>`${sql.raw(WHOLE_PAYLOAD_FUNCTION)}(${sql.ref('bodies.payload_bytes')}, ${sql.ref('input.payload_bytes')}, ${sql.ref('inserted.provider')}, ${sql.ref('inserted.event_id')})`.as(
            'payload_bytes',
          ),
        ]),
    ' union all ',
  );
}

export type NewEventsWithBodiesInsert = ReturnType<typeof newEventsWithBodiesInsert>;

/** The RecordNotStoredError that WHOLE_PAYLOAD_FUNCTION's error stands for, or null for any other error. */
function payloadNotWhole(error: unknown, requests: RecordRequest[]): RecordNotStoredError | null {
  const { code, detail } = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown; detail?: unknown };
  if (code !== PAYLOAD_NOT_WHOLE_STATE || typeof detail !== 'string') return null;
  const { provider, event_id: eventId, stored } = JSON.parse(detail) as { provider: string; event_id: string; stored: number | null };
  const request = requests.find(({ event }) => event.provider === provider && event.eventId === eventId);
  return request ? incompleteError(request.event, stored ?? 0) : null;
}

/**
 * PostgreSQL's batch: one statement (newEventsWithBodiesInsert), then one read for the events it did
 * not insert. A payload stored with another size fails the statement whole, and the error names the
 * event: it becomes that event's RecordNotStoredError. `statement`: compiled for `db` unless given.
 */
export function oneStatementBatch(db: Kysely<InboxDatabase>, statement: NewEventsWithBodiesInsert = newEventsWithBodiesInsert(db)): BatchInsert {
  return {
    kind: 'one statement',
    minBatch: 2,
    async insert(unique) {
      let rows: InsertedRow[];
      try {
        ({ rows } = await statement(unique.map(newEventWithBody), db));
      } catch (error) {
        throw payloadNotWhole(error, unique) ?? error;
      }
      return outcomeOf(db, unique, new Map(rows.map((row) => [eventKey(row.provider, row.event_id), Number(row.id)])));
    },
  };
}
