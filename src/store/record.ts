import { sql, type ExpressionBuilder, type Kysely } from 'kysely';
import type { VerifiedEvent } from '../model/delivery.js';
import type { DbTime, EventStatus, InboxDatabase } from '../db/schema.js';
import { groupBy } from '../db/batcher.js';
import { compiledRowsStatement } from '../db/compiled-statement.js';
import type { RecordResult } from './inbox-store.js';

export interface RecordRequest {
  event: VerifiedEvent;
  /** The payment the event is about (events of one payment are processed one at a time). */
  paymentId: string | null;
  receivedAt: DbTime;
}

/**
 * Another writer (a concurrent batch, another process) inserted one of the batch's events between
 * its read and its insert: which rows are the batch's own is no longer known, so it rolls back and
 * its events are recorded one by one instead.
 */
export class ConcurrentInsertError extends Error {}

export const eventKey = (provider: string, eventId: string) => `${provider}\u0000${eventId}`;

/** The row a new event is stored as, whether it is recorded alone or in a batch. */
export function newEventRow({ event, paymentId, receivedAt }: RecordRequest) {
  return {
    provider: event.provider,
    event_id: event.eventId,
    event_type: event.eventType,
    payload: event.payload,
    headers: JSON.stringify(event.headers),
    status: 'received' as const,
    attempts: 0,
    next_attempt_at: receivedAt,
    created_at: receivedAt,
    payment_id: paymentId,
  };
}

export type NewEventRow = ReturnType<typeof newEventRow>;

// Every column of the row, once: the record keyed by them makes the compiler check none is missing.
const NEW_EVENT_COLUMN_SET: Record<keyof NewEventRow, true> = {
  provider: true,
  event_id: true,
  event_type: true,
  payload: true,
  headers: true,
  status: true,
  attempts: true,
  next_attempt_at: true,
  created_at: true,
  payment_id: true,
};
export const NEW_EVENT_COLUMNS = Object.keys(NEW_EVENT_COLUMN_SET) as Array<keyof NewEventRow>;

/**
 * One new event as a row to insert, unless its key was archived. The archive commits the key before
 * it deletes the row, so an insert racing it meets one or the other: the row (the unique key ignores
 * the insert) or the key (this condition drops it).
 */
export function newEventSource(db: Kysely<InboxDatabase>, value: <Column extends keyof NewEventRow>(column: Column) => NewEventRow[Column]) {
  return db
    .selectNoFrom(NEW_EVENT_COLUMNS.map((column) => sql.val(value(column)).as(column)))
    .where((eb) => eb.not(eb.exists(eb.selectFrom('archived_event_keys').select('id').where('provider', '=', value('provider')).where('event_id', '=', value('event_id')))));
}

interface KnownRow {
  id: number;
  status: EventStatus;
}

/** Matches the batch's (provider, event_id) keys, a query per provider present, in one statement. */
function whereKeys(events: VerifiedEvent[]) {
  const byProvider = groupBy(events, (event) => event.provider);
  return (eb: ExpressionBuilder<InboxDatabase, 'webhook_events' | 'archived_event_keys'>) =>
    eb.or(
      [...byProvider].map(([provider, group]) =>
        eb.and([
          eb('provider', '=', provider),
          eb(
            'event_id',
            'in',
            group.map((e) => e.eventId),
          ),
        ]),
      ),
    );
}

/** Events already known, in one statement: stored, or archived (their key stays behind, with the row id they had). */
async function knownByKey(db: Kysely<InboxDatabase>, events: VerifiedEvent[]): Promise<Map<string, KnownRow>> {
  const rows = await db
    .selectFrom('webhook_events')
    .select(['id', 'provider', 'event_id', 'status'])
    .where(whereKeys(events))
    .unionAll(
      db
        .selectFrom('archived_event_keys')
        .select(['event_row_id as id', 'provider', 'event_id', sql.lit<EventStatus>('processed').as('status')])
        .where(whereKeys(events)),
    )
    .execute();
  const known = new Map<string, KnownRow>();
  // A stored row comes first; its archived key, if the archive is moving it right now, names the same id.
  for (const row of rows) if (!known.has(eventKey(row.provider, row.event_id))) known.set(eventKey(row.provider, row.event_id), { id: Number(row.id), status: row.status });
  return known;
}

/** The batch's own new rows (by key) and the rows its other events already had. */
interface BatchOutcome {
  created: Map<string, number>;
  existing: Map<string, KnownRow>;
}

/**
 * The batch insert of `insertReturning`, compiled once: a SELECT per event joined by UNION ALL. It runs
 * as a compiled query, never through the builder's `execute`: kysely's MySQL adapter does not claim
 * RETURNING, which MariaDB has.
 */
export function newEventsInsert(db: Kysely<InboxDatabase>) {
  return compiledRowsStatement<NewEventRow, ReturnType<typeof newEventSource>, { id: number; provider: string; event_id: string }, InboxDatabase>(
    db,
    newEventSource,
    (db, source) => db.insertInto('webhook_events').orIgnore().columns(NEW_EVENT_COLUMNS).expression(source).returning(['id', 'provider', 'event_id']),
    ' union all ',
  );
}

export type NewEventsInsert = ReturnType<typeof newEventsInsert>;

/**
 * The sizes a record batch takes: any up to 8 events, then powers of two and halfway between them
 * (12, 16, 24, 32, 48, 64, 96, 128). Each size is one statement text, so a few shapes cover every
 * batch and all of them stay prepared on the server; a batch of a size in between leaves its last
 * events to the next one.
 */
export function recordBatchShape(size: number): number {
  if (size <= 8) return size;
  const power = 2 ** Math.floor(Math.log2(size));
  return size >= power * 1.5 ? power * 1.5 : power;
}

/**
 * One autocommit statement: a multi-row INSERT IGNORE of every event not archived, returning the
 * rows it inserted. An event it did not insert was stored already (or by a concurrent writer, whose
 * commit the insert waited for) or archived, and one more read finds its row.
 */
async function insertReturning(db: Kysely<InboxDatabase>, insert: NewEventsInsert, unique: RecordRequest[]): Promise<BatchOutcome> {
  const { rows } = await insert(unique.map(newEventRow));
  const created = new Map(rows.map((row) => [eventKey(row.provider, row.event_id), Number(row.id)]));
  const others = unique.filter((r) => !created.has(eventKey(r.event.provider, r.event.eventId))).map((r) => r.event);
  return { created, existing: others.length === 0 ? new Map<string, KnownRow>() : await knownByKey(db, others) };
}

/**
 * Without RETURNING (MySQL): in one transaction, read which events exist (or were archived), insert
 * the others in one multi-row INSERT IGNORE, read back their ids. A multi-row insert's affected-row
 * count says how many rows were new but not which, so the read before the insert decides, and the
 * count only confirms that nobody else inserted one of them in between (otherwise
 * ConcurrentInsertError).
 */
async function insertInTransaction(db: Kysely<InboxDatabase>, unique: RecordRequest[]): Promise<BatchOutcome> {
  return db.transaction().execute(async (tx) => {
    const existing = await knownByKey(
      tx,
      unique.map((r) => r.event),
    );
    const missing = unique.filter((r) => !existing.has(eventKey(r.event.provider, r.event.eventId)));
    if (missing.length === 0) return { existing, created: new Map() };
    const inserted = await tx.insertInto('webhook_events').orIgnore().values(missing.map(newEventRow)).executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows) !== missing.length) throw new ConcurrentInsertError('an event of the batch was inserted concurrently');
    const created = await knownByKey(
      tx,
      missing.map((r) => r.event),
    );
    return { existing, created: new Map([...created].map(([key, row]) => [key, row.id])) };
  });
}

/**
 * Records many events at once, with one commit. With `insert` (the database has INSERT ... RETURNING:
 * MariaDB, SQLite) a batch is one statement, two with duplicates, instead of a transaction of five,
 * which matters as soon as a round trip to the database costs.
 * Within the batch, the first request for an event records it; the others are its duplicates. An
 * event whose row the database neither inserted nor holds (see RecordNotStoredError) is answered null,
 * for the caller to record alone; the batch's other answers stand.
 */
export async function recordBatch(db: Kysely<InboxDatabase>, requests: RecordRequest[], insert: NewEventsInsert | null): Promise<Array<RecordResult | null>> {
  const firstByKey = new Map<string, RecordRequest>();
  for (const request of requests) {
    const key = eventKey(request.event.provider, request.event.eventId);
    if (!firstByKey.has(key)) firstByKey.set(key, request);
  }
  // Sorted, so concurrent batches lock index entries in the same order and cannot deadlock.
  const unique = [...firstByKey.values()].sort((a, b) => compare(a.event, b.event));
  const { created, existing } = await (insert ? insertReturning(db, insert, unique) : insertInTransaction(db, unique));

  return requests.map((request): RecordResult | null => {
    const key = eventKey(request.event.provider, request.event.eventId);
    const id = created.get(key);
    if (id !== undefined) return { outcome: firstByKey.get(key) === request ? 'recorded' : 'duplicate', id, status: 'received' };
    const row = existing.get(key);
    return row ? { outcome: 'duplicate', id: row.id, status: row.status } : null;
  });
}

function compare(a: VerifiedEvent, b: VerifiedEvent): number {
  if (a.provider !== b.provider) return a.provider < b.provider ? -1 : 1;
  return a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0;
}
