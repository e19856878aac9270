import { sql, type ExpressionBuilder, type Kysely } from 'kysely';
import { RecordNotStoredError } from '../errors.js';
import type { VerifiedEvent } from '../providers/provider.js';
import type { DbTime, EventStatus, InboxDatabase } from './schema.js';
import { groupBy } from './batcher.js';
import { compiledRowsStatement } from './compiled-statement.js';
import type { RecordResult } from './store.js';

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
 * Columns of any length, bound as `CAST(? AS CHAR)`. A record batch selects its rows with
 * `SELECT ? UNION ALL SELECT ? ...`, and MariaDB types a UNION's column from its parameters: a bare
 * string parameter (mysql2 binds strings as MYSQL_TYPE_VAR_STRING) makes it a VARCHAR, whose length
 * the UNION's temporary table keeps in two bytes, so a value over 65,535 bytes came out with its
 * length modulo 65,536, without an error or a warning. Cast, the column is a TEXT type sized for the
 * value, as for a literal. Keys and numbers stay bare: they are short, and typed by their columns.
 */
const UNBOUNDED_TEXT_COLUMNS: ReadonlySet<keyof NewEventRow> = new Set(['payload', 'headers']);

/**
 * One new event as a row to insert, unless its key was archived. The archive commits the key before
 * it deletes the row, so an insert racing it meets one or the other: the row (the unique key ignores
 * the insert) or the key (this condition drops it).
 */
export function newEventSource(db: Kysely<InboxDatabase>, value: <Column extends keyof NewEventRow>(column: Column) => NewEventRow[Column]) {
  return db
    .selectNoFrom(NEW_EVENT_COLUMNS.map((column) => (UNBOUNDED_TEXT_COLUMNS.has(column) ? sql`cast(${value(column)} as char)` : sql.val(value(column))).as(column)))
    .where(({ not, exists, selectFrom }) =>
      not(exists(selectFrom('archived_event_keys').select('id').where('provider', '=', value('provider')).where('event_id', '=', value('event_id')))),
    );
}

interface KnownRow {
  id: number;
  status: EventStatus;
}

/** Matches the batch's (provider, event_id) keys, a query per provider present, in one statement. */
function whereKeys(events: VerifiedEvent[]) {
  const byProvider = groupBy(events, (event) => event.provider);
  return (eb: ExpressionBuilder<InboxDatabase, 'webhook_events' | 'archived_event_keys'>) =>
    eb.or([...byProvider].map(([provider, group]) => eb.and([eb('provider', '=', provider), eb('event_id', 'in', group.map((e) => e.eventId))])));
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

/**
 * The payload's size as the database stored it, in bytes (octet_length in both stores), read by the
 * statement that inserts the row: an acknowledgement is given only for a payload stored whole.
 */
export const storedPayloadBytes = sql<number | string>`octet_length(${sql.ref('payload')})`.as('payload_bytes');

interface StoredRow {
  id: number;
  provider: string;
  event_id: string;
  payload_bytes: number | string;
}

/**
 * Deletes rows just inserted whose payload the database did not store whole, each while nothing took
 * it up yet; true when every one of them went. A deleted event is simply recorded again; one already
 * claimed (a concurrent duplicate answered for it) fails to process, for an operator to see.
 */
export async function discardIncomplete(db: Kysely<InboxDatabase>, ids: number[]): Promise<boolean> {
  const deleted = await db.deleteFrom('webhook_events').where('id', 'in', ids).where('status', '=', 'received').where('attempts', '=', 0).executeTakeFirst();
  return Number(deleted.numDeletedRows) === ids.length;
}

export function incompleteError(event: VerifiedEvent, storedBytes: number): RecordNotStoredError {
  return new RecordNotStoredError(
    `event ${event.provider}/${event.eventId}: the database stored ${storedBytes} of its ${Buffer.byteLength(event.payload)} payload bytes; not acknowledged`,
  );
}

/** The batch's own new rows (by key), the rows its other events already had, and its events not stored whole. */
interface BatchOutcome {
  created: Map<string, number>;
  existing: Map<string, KnownRow>;
  /** By key: null when the row was discarded (record the event again), else why it cannot be acknowledged. */
  incomplete: Map<string, RecordNotStoredError | null>;
}

/**
 * The batch insert of `insertReturning`, compiled once: a SELECT per event joined by UNION ALL. It runs
 * as a compiled query, never through the builder's `execute`: kysely's MySQL adapter does not claim
 * RETURNING, which MariaDB has.
 */
export function newEventsInsert(db: Kysely<InboxDatabase>) {
  return compiledRowsStatement<NewEventRow, ReturnType<typeof newEventSource>, StoredRow, InboxDatabase>(
    db,
    newEventSource,
    (db, source) => db.insertInto('webhook_events').orIgnore().columns(NEW_EVENT_COLUMNS).expression(source).returning(['id', 'provider', 'event_id', storedPayloadBytes]),
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

/** Inserted rows whose payload is not the size received, by key, with the size stored. */
function incompleteRows(unique: RecordRequest[], rows: StoredRow[]): Map<string, { id: number; storedBytes: number; event: VerifiedEvent }> {
  const received = new Map(unique.map((r) => [eventKey(r.event.provider, r.event.eventId), r.event]));
  const incomplete = new Map<string, { id: number; storedBytes: number; event: VerifiedEvent }>();
  for (const row of rows) {
    const key = eventKey(row.provider, row.event_id);
    const event = received.get(key);
    if (event && Number(row.payload_bytes) !== Buffer.byteLength(event.payload)) incomplete.set(key, { id: Number(row.id), storedBytes: Number(row.payload_bytes), event });
  }
  return incomplete;
}

/**
 * One autocommit statement: a multi-row INSERT IGNORE of every event not archived, returning the
 * rows it inserted with the size of each stored payload. An event it did not insert was stored
 * already (or by a concurrent writer, whose commit the insert waited for) or archived, and one more
 * read finds its row. A row whose payload was not stored whole is discarded (see discardIncomplete).
 */
async function insertReturning(db: Kysely<InboxDatabase>, insert: NewEventsInsert, unique: RecordRequest[]): Promise<BatchOutcome> {
  const { rows } = await insert(unique.map(newEventRow));
  const bad = incompleteRows(unique, rows);
  const incomplete = new Map<string, RecordNotStoredError | null>();
  if (bad.size > 0) {
    const discarded = await discardIncomplete(db, [...bad.values()].map((row) => row.id));
    for (const [key, row] of bad) incomplete.set(key, discarded ? null : incompleteError(row.event, row.storedBytes));
  }
  const created = new Map<string, number>();
  for (const row of rows) {
    const key = eventKey(row.provider, row.event_id);
    if (!bad.has(key)) created.set(key, Number(row.id));
  }
  const others = unique.map((r) => r.event).filter((event) => !created.has(eventKey(event.provider, event.eventId)) && !bad.has(eventKey(event.provider, event.eventId)));
  return { created, incomplete, existing: others.length === 0 ? new Map() : await knownByKey(db, others) };
}

/**
 * Without RETURNING (MySQL): in one transaction, read which events exist (or were archived), insert
 * the others in one multi-row INSERT IGNORE, read back their ids and payload sizes. A multi-row
 * insert's affected-row count says how many rows were new but not which, so the read before the
 * insert decides, and the count only confirms that nobody else inserted one of them in between
 * (otherwise ConcurrentInsertError). A payload not stored whole rolls the transaction back, and the
 * store records the batch's events one by one.
 */
async function insertInTransaction(db: Kysely<InboxDatabase>, unique: RecordRequest[]): Promise<BatchOutcome> {
  return db.transaction().execute(async (tx) => {
    const existing = await knownByKey(tx, unique.map((r) => r.event));
    const missing = unique.filter((r) => !existing.has(eventKey(r.event.provider, r.event.eventId)));
    if (missing.length === 0) return { existing, created: new Map(), incomplete: new Map() };
    const inserted = await tx.insertInto('webhook_events').orIgnore().values(missing.map(newEventRow)).executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows) !== missing.length) throw new ConcurrentInsertError('an event of the batch was inserted concurrently');
    const rows = await tx.selectFrom('webhook_events').select(['id', 'provider', 'event_id', storedPayloadBytes]).where(whereKeys(missing.map((r) => r.event))).execute();
    const bad = incompleteRows(missing, rows);
    const [incomplete] = bad.values();
    if (incomplete) throw incompleteError(incomplete.event, incomplete.storedBytes);
    return { existing, created: new Map(rows.map((row) => [eventKey(row.provider, row.event_id), Number(row.id)])), incomplete: new Map() };
  });
}

/**
 * Records many events at once, with one commit. With `insert` (the database has INSERT ... RETURNING:
 * MariaDB, SQLite) a batch is one statement, two with duplicates, instead of a transaction of five,
 * which matters as soon as a round trip to the database costs (bench/NOTES.md, eighth session).
 * Within the batch, the first request for an event records it; the others are its duplicates. An
 * event whose row the database neither inserted nor holds (see RecordNotStoredError), or whose
 * payload it stored incomplete and let go, is answered null, for the caller to record alone; one
 * whose incomplete row stays gets its error. The batch's other answers stand.
 */
export async function recordBatch(db: Kysely<InboxDatabase>, requests: RecordRequest[], insert: NewEventsInsert | null): Promise<Array<RecordResult | RecordNotStoredError | null>> {
  const firstByKey = new Map<string, RecordRequest>();
  for (const request of requests) {
    const key = eventKey(request.event.provider, request.event.eventId);
    if (!firstByKey.has(key)) firstByKey.set(key, request);
  }
  // Sorted, so concurrent batches lock index entries in the same order and cannot deadlock.
  const unique = [...firstByKey.values()].sort((a, b) => compare(a.event, b.event));
  const { created, existing, incomplete } = await (insert ? insertReturning(db, insert, unique) : insertInTransaction(db, unique));

  return requests.map((request): RecordResult | RecordNotStoredError | null => {
    const key = eventKey(request.event.provider, request.event.eventId);
    const id = created.get(key);
    if (id !== undefined) return { outcome: firstByKey.get(key) === request ? 'recorded' : 'duplicate', id, status: 'received' };
    if (incomplete.has(key)) return incomplete.get(key)!;
    const row = existing.get(key);
    return row ? { outcome: 'duplicate', id: row.id, status: row.status } : null;
  });
}

function compare(a: VerifiedEvent, b: VerifiedEvent): number {
  if (a.provider !== b.provider) return a.provider < b.provider ? -1 : 1;
  return a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0;
}
