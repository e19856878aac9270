import { CompiledQuery, sql, type ExpressionBuilder, type Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import type { StoreBackend } from '../db/backend.js';
import { Batcher } from '../db/batcher.js';
import { compiledRowsStatement, compiledValuesStatement } from '../db/compiled-statement.js';
import { RECORD_EVENT_PROCEDURE } from '../db/mysql/record-event-procedure-v1.js';
import { RECORD_EVENTS_PROCEDURE } from '../db/mysql/record-events-procedure-v1.js';
import { PAYLOAD_NOT_WHOLE_STATE, WHOLE_PAYLOAD_FUNCTION } from '../db/postgres/whole-payload-function-v1.js';
import { toDbTime } from '../db/schema.js';
import { RecordNotStoredError } from '../errors.js';
import type { VerifiedEvent } from '../model/delivery.js';
import type { DbTime, EventStatus, InboxDatabase } from '../db/schema.js';
import { groupBy } from '../db/batcher.js';
import type { DatabaseErrors } from './database-errors.js';
import type { RecordResult } from './inbox-store.js';

/**
 * Recording deliveries: group commit (see Batcher), so concurrent deliveries are recorded together, a
 * multi-row insert of their events and one of their bodies (one statement on PostgreSQL, a
 * transaction elsewhere), and share a commit (and its log flush); an event alone on MySQL and MariaDB
 * is one call of a procedure. An acknowledgement is given only for a payload the database stored whole.
 */

/** Inserts of one event whose row the database dropped (RecordNotStoredError): each takes a new id. */
const RECORD_ATTEMPTS = 5;
/**
 * Events per group commit, the largest recordBatchShape; bounded so one statement stays far below
 * parameter and packet limits.
 */
export const MAX_RECORD_BATCH = 128;
const MAX_RECORD_BATCH_BYTES = 4 * 1024 * 1024;
/** Without RETURNING a batch is a transaction of five round trips, worth it from a handful of events on. */
const MIN_TRANSACTION_BATCH = 4;

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
    status: 'received' as const,
    attempts: 0,
    next_attempt_at: receivedAt,
    created_at: receivedAt,
    payment_id: paymentId,
    source: event.source ?? 'delivery',
  };
}

export type NewEventRow = ReturnType<typeof newEventRow>;

// Every column of the row, once: the record keyed by them makes the compiler check none is missing.
const NEW_EVENT_COLUMN_SET: Record<keyof NewEventRow, true> = {
  provider: true,
  event_id: true,
  event_type: true,
  status: true,
  attempts: true,
  next_attempt_at: true,
  created_at: true,
  payment_id: true,
  source: true,
};
export const NEW_EVENT_COLUMNS = Object.keys(NEW_EVENT_COLUMN_SET) as Array<keyof NewEventRow>;

/**
 * A column of a new event's row in `newEventSource`. `attempts` is a literal 0, which every new row
 * has: PostgreSQL types a UNION's column of untyped parameters as text, which an integer column
 * refuses. Every other value is short (keys, a type, a time): MariaDB types a UNION's column from its
 * parameters, and cut a bound string of over 65,535 bytes to its length modulo 65,536, which is why
 * the payload goes into its body row by a VALUES list instead (newBodiesInsert).
 */
function columnSource(eb: ExpressionBuilder<InboxDatabase, never>, column: keyof NewEventRow, value: <Column extends keyof NewEventRow>(column: Column) => NewEventRow[Column]) {
  return column === 'attempts' ? sql.lit(0).as(column) : eb.val(value(column)).as(column);
}

/** What a new event's body row stores. */
function bodyOf(event: VerifiedEvent): { payload: string; headers: string } {
  return { payload: event.payload, headers: JSON.stringify(event.headers) };
}

/** The body row of a new event, inserted by the transaction that inserts its row `id`. */
export function newBodyRow(id: number, event: VerifiedEvent): NewBodyRow {
  return { event_row_id: id, ...bodyOf(event) };
}

export interface NewBodyRow extends Record<string, unknown> {
  event_row_id: number;
  payload: string;
  headers: string;
}

/**
 * One new event as a row to insert, unless its key was archived. The archive commits the key before
 * it deletes the row, so an insert racing it meets one or the other: the row (the unique key ignores
 * the insert) or the key (this condition drops it).
 */
export function newEventSource(db: Kysely<InboxDatabase>, value: <Column extends keyof NewEventRow>(column: Column) => NewEventRow[Column]) {
  return db
    .selectNoFrom((eb) => NEW_EVENT_COLUMNS.map((column) => columnSource(eb, column, value)))
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

/**
 * The payload's size as the database stored it, in bytes (octet_length in every store), read in the
 * transaction that inserts the body: an acknowledgement is given only for a payload stored whole.
 */
export const storedPayloadBytes = sql<number | string>`octet_length(${sql.ref('payload')})`.as('payload_bytes');

interface InsertedRow {
  id: number;
  provider: string;
  event_id: string;
}

interface StoredBody {
  event_row_id: number;
  payload_bytes: number | string;
}

export function incompleteError(event: VerifiedEvent, storedBytes: number): RecordNotStoredError {
  return new RecordNotStoredError(
    `event ${event.provider}/${event.eventId}: the database stored ${storedBytes} of its ${Buffer.byteLength(event.payload)} payload bytes; not acknowledged`,
  );
}

/** The batch's own new rows (by key), and the rows its other events already had. */
interface BatchOutcome {
  created: Map<string, number>;
  existing: Map<string, KnownRow>;
}

/**
 * The statements of a record batch where the database has INSERT ... RETURNING, compiled once: the
 * events (a SELECT per event joined by UNION ALL, so that the archive's keys can be checked) and
 * their bodies (a VALUES list). They run as compiled queries, never through the builder's `execute`:
 * kysely's MySQL adapter does not claim RETURNING, which MariaDB has.
 */
export function newEventsInsert(db: Kysely<InboxDatabase>, oneStatement: boolean) {
  return {
    /** The batch in one statement, where the database can (see StoreBackend.recordsInOneStatement). */
    together: oneStatement ? newEventsWithBodiesInsert(db) : null,
    events: compiledRowsStatement<NewEventRow, ReturnType<typeof newEventSource>, InsertedRow, InboxDatabase>(
      db,
      newEventSource,
      (db, source) => db.insertInto('webhook_events').orIgnore().columns(NEW_EVENT_COLUMNS).expression(source).returning(['id', 'provider', 'event_id']),
      ' union all ',
    ),
    bodies: newBodiesInsert(db),
  };
}

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
 * Where the database runs data-modifying CTEs (PostgreSQL): a record batch as one statement, which
 * commits by itself. It inserts every event not archived (a conflict on the event's key skips it),
 * then the bodies of the rows it inserted, and answers each new row with its stored payload's size
 * through WHOLE_PAYLOAD_FUNCTION, whose error on a size that differs fails the statement, rows and
 * bodies together (migration 0025).
 */
function newEventsWithBodiesInsert(db: Kysely<InboxDatabase>) {
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

export type NewEventsInsert = ReturnType<typeof newEventsInsert>;

/** The bodies' insert, compiled once; it answers each body's stored payload size. */
function newBodiesInsert(db: Kysely<InboxDatabase>) {
  return compiledValuesStatement<NewBodyRow, StoredBody, InboxDatabase>(db, (db, value) =>
    db
      .insertInto('webhook_event_bodies')
      .values({ event_row_id: value('event_row_id'), payload: value('payload'), headers: value('headers') })
      .returning(['event_row_id', storedPayloadBytes]),
  );
}

/**
 * Throws, rolling the record's transaction back, unless each body was stored with its payload's size.
 * An event not acknowledged is delivered again by its provider.
 */
function assertWhole(bodies: NewBodyRow[], events: Map<number, VerifiedEvent>, stored: StoredBody[]): void {
  const bytes = new Map(stored.map((row) => [Number(row.event_row_id), Number(row.payload_bytes)]));
  for (const body of bodies) {
    const storedBytes = bytes.get(body.event_row_id) ?? 0;
    if (storedBytes !== Buffer.byteLength(body.payload)) throw incompleteError(events.get(body.event_row_id)!, storedBytes);
  }
}

/** The body rows of the events a batch inserted, and each row's event by id. */
function bodiesOf(unique: RecordRequest[], inserted: InsertedRow[]): { bodies: NewBodyRow[]; events: Map<number, VerifiedEvent> } {
  const byKey = new Map(unique.map((r) => [eventKey(r.event.provider, r.event.eventId), r.event]));
  const events = new Map(inserted.map((row) => [Number(row.id), byKey.get(eventKey(row.provider, row.event_id))!]));
  return { events, bodies: [...events].map(([id, event]) => newBodyRow(id, event)) };
}

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
 * One transaction: a multi-row INSERT IGNORE of every event not archived, returning the rows it
 * inserted, and one insert of their bodies, returning the size of each stored payload. An event it
 * did not insert was stored already (or by a concurrent writer, whose commit the insert waited for)
 * or archived, and one more read finds its row.
 */
async function insertReturning(db: Kysely<InboxDatabase>, insert: NewEventsInsert, unique: RecordRequest[]): Promise<BatchOutcome> {
  const created = insert.together
    ? await insertTogether(db, insert.together, unique)
    : await db.transaction().execute(async (tx) => {
        const { rows } = await insert.events(unique.map(newEventRow), tx);
        if (rows.length === 0) return new Map<string, number>();
        const { bodies, events } = bodiesOf(unique, rows);
        assertWhole(bodies, events, (await insert.bodies(bodies, tx)).rows);
        return new Map(rows.map((row) => [eventKey(row.provider, row.event_id), Number(row.id)]));
      });
  const others = unique.map((r) => r.event).filter((event) => !created.has(eventKey(event.provider, event.eventId)));
  return { created, existing: others.length === 0 ? new Map<string, KnownRow>() : await knownByKey(db, others) };
}

/**
 * The batch's one statement (newEventsWithBodiesInsert). A payload stored with another size fails it
 * whole, and the error names the event: it becomes that event's RecordNotStoredError.
 */
async function insertTogether(db: Kysely<InboxDatabase>, together: NonNullable<NewEventsInsert['together']>, unique: RecordRequest[]): Promise<Map<string, number>> {
  try {
    const { rows } = await together(unique.map(newEventWithBody), db);
    return new Map(rows.map((row) => [eventKey(row.provider, row.event_id), Number(row.id)]));
  } catch (error) {
    throw payloadNotWhole(error, unique) ?? error;
  }
}

/** The RecordNotStoredError that WHOLE_PAYLOAD_FUNCTION's error stands for, or null for any other error. */
function payloadNotWhole(error: unknown, requests: RecordRequest[]): RecordNotStoredError | null {
  const { code, detail } = (typeof error === 'object' && error !== null ? error : {}) as { code?: unknown; detail?: unknown };
  if (code !== PAYLOAD_NOT_WHOLE_STATE || typeof detail !== 'string') return null;
  const { provider, event_id: eventId, stored } = JSON.parse(detail) as { provider: string; event_id: string; stored: number | null };
  const request = requests.find(({ event }) => event.provider === provider && event.eventId === eventId);
  return request ? incompleteError(request.event, stored ?? 0) : null;
}

/**
 * Without RETURNING (MySQL): in one transaction, read which events exist (or were archived), insert
 * the others in one multi-row INSERT IGNORE, read back their ids, insert their bodies and read back
 * their payload sizes. A multi-row insert's affected-row count says how many rows were new but not
 * which, so the read before the insert decides, and the count only confirms that nobody else
 * inserted one of them in between (otherwise ConcurrentInsertError).
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
    const rows = await tx
      .selectFrom('webhook_events')
      .select(['id', 'provider', 'event_id'])
      .where(whereKeys(missing.map((r) => r.event)))
      .execute();
    const { bodies, events } = bodiesOf(missing, rows);
    await tx.insertInto('webhook_event_bodies').values(bodies).execute();
    assertWhole(bodies, events, await storedBodies(tx, [...events.keys()]));
    return { existing, created: new Map(rows.map((row) => [eventKey(row.provider, row.event_id), Number(row.id)])) };
  });
}

const RECORD_EVENTS_CALL = `call ${RECORD_EVENTS_PROCEDURE}(?, ?)`;

/**
 * The batch in one call of RECORD_EVENTS_PROCEDURE: each event's fields as a JSON array, in the order
 * migration 0027 reads them (its keys, then where its payload starts in the bytes, counted from 1 as
 * SQL's SUBSTRING does, and its payload's and headers' sizes), then the bytes.
 */
async function insertByCall(db: Kysely<InboxDatabase>, unique: RecordRequest[]): Promise<BatchOutcome> {
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
}

function storedBodies(db: Kysely<InboxDatabase>, ids: number[]): Promise<StoredBody[]> {
  return db.selectFrom('webhook_event_bodies').select(['event_row_id', storedPayloadBytes]).where('event_row_id', 'in', ids).execute();
}

/**
 * How a record batch inserts its events: with the statements that answer the rows they inserted
 * (INSERT ... RETURNING: MariaDB, PostgreSQL, SQLite), by one call of RECORD_EVENTS_PROCEDURE (MariaDB
 * 10.6 and later, where migration 0027 created it), or by a transaction that reads which events exist
 * before it inserts the others (MySQL).
 */
export type RecordBatchPath = { kind: 'returning'; insert: NewEventsInsert } | { kind: 'call' } | { kind: 'transaction' };

/**
 * Records many events at once, with one commit: a transaction of two statements and one more read
 * with duplicates (RETURNING; one statement on PostgreSQL, where `insert.together` is set), one call,
 * or a transaction of five statements (see RecordBatchPath).
 * Within the batch, the first request for an event records it; the others are its duplicates. An
 * event whose row the database neither inserted nor holds (see RecordNotStoredError) is answered
 * null, for the caller to record alone; the batch's other answers stand. A payload not stored whole
 * rolls the batch back with a RecordNotStoredError.
 */
export async function recordBatch(db: Kysely<InboxDatabase>, requests: RecordRequest[], path: RecordBatchPath): Promise<Array<RecordResult | null>> {
  const firstByKey = new Map<string, RecordRequest>();
  for (const request of requests) {
    const key = eventKey(request.event.provider, request.event.eventId);
    if (!firstByKey.has(key)) firstByKey.set(key, request);
  }
  // Sorted, so concurrent batches lock index entries in the same order and cannot deadlock.
  const unique = [...firstByKey.values()].sort((a, b) => compare(a.event, b.event));
  const { created, existing } = await (path.kind === 'returning'
    ? insertReturning(db, path.insert, unique)
    : path.kind === 'call'
      ? insertByCall(db, unique)
      : insertInTransaction(db, unique));

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

/**
 * The acknowledgement path's writer: deliveries are batched (one batch per connection of `ackDb` at a
 * time), a batch is one or two statements where the database has INSERT ... RETURNING (see
 * recordBatch), and an event a batch could not settle, or that comes alone, is recorded alone.
 * `ackDb` serves this path alone, so a delivery's insert never queues behind processing statements
 * for a pooled connection.
 */
export class EventRecorder {
  private readonly batcher: Batcher<RecordRequest, RecordResult>;
  /** How this database records a batch, asked of it once (see RecordBatchPath). */
  private batchPath: Promise<RecordBatchPath> | undefined;
  private readonly insertNewEvents: NewEventsInsert;

  /** @param recordBatches record batches running at once, one per connection of `ackDb`. */
  constructor(
    private readonly ackDb: Kysely<InboxDatabase>,
    recordBatches: number,
    private readonly backend: StoreBackend,
    private readonly errors: DatabaseErrors,
    private readonly clock: Clock,
  ) {
    this.batcher = new Batcher((requests) => this.recordMany(requests), {
      maxBatch: MAX_RECORD_BATCH,
      maxInFlight: recordBatches,
      weight: (request) => request.event.payload.length,
      maxWeight: MAX_RECORD_BATCH_BYTES,
      shape: recordBatchShape,
      // A provider's concurrent copies of one event wait for the first one's record: run beside it,
      // each would insert the same key and wait for the other's row lock, its whole batch with it.
      coalesce: { keyOf: (request) => eventKey(request.event.provider, request.event.eventId), copy: (first) => ({ ...first, outcome: 'duplicate' }) },
    });
    this.insertNewEvents = newEventsInsert(ackDb, backend.recordsInOneStatement);
  }

  /** Resolves once the batch that carries the event has committed. */
  record(event: VerifiedEvent, paymentId: string | null): Promise<RecordResult> {
    return this.batcher.submit({ event, paymentId, receivedAt: toDbTime(this.clock.now()) });
  }

  private async recordMany(requests: RecordRequest[]): Promise<Array<PromiseSettledResult<RecordResult>>> {
    const alone = () => Promise.allSettled(requests.map((request) => this.recordOne(request)));
    if (requests.length === 1) return alone();
    try {
      const path = await this.recordBatchPath();
      if (path.kind === 'transaction' && requests.length < MIN_TRANSACTION_BATCH) return await alone();
      const results = await this.errors.withConflictRetries(() => recordBatch(this.ackDb, requests, path));
      return await Promise.allSettled(results.map((result, i) => (result ? Promise.resolve(result) : this.recordOne(requests[i]!))));
    } catch (error) {
      // Unreachable: every waiting delivery gets the 503. Otherwise a concurrent insert of one of the
      // events (ConcurrentInsertError), a payload stored incomplete, or one row the database refuses,
      // each rolled back: each event alone, so only a bad one fails.
      if (this.backend.isUnavailable(error)) throw this.errors.translate(error);
      return alone();
    }
  }

  /** Asked of the server once; asked again after a failure (it may have been down). */
  private recordBatchPath(): Promise<RecordBatchPath> {
    this.batchPath ??= this.askBatchPath().catch((error: unknown) => {
      this.batchPath = undefined;
      throw error;
    });
    return this.batchPath;
  }

  private async askBatchPath(): Promise<RecordBatchPath> {
    if (await this.backend.recordsBatchesInOneCall(this.ackDb)) return { kind: 'call' };
    return (await this.backend.insertReturning(this.ackDb)) ? { kind: 'returning', insert: this.insertNewEvents } : { kind: 'transaction' };
  }

  /**
   * One event, one transaction. A row that was neither inserted nor found is inserted again (see
   * RecordNotStoredError); a batch leaves such an event to this.
   */
  private async recordOne(request: RecordRequest): Promise<RecordResult> {
    const { event } = request;
    for (let attempt = 1; ; attempt++) {
      const result = await this.errors.guard(() => this.insertOne(request));
      if (result) return result;
      if (attempt === RECORD_ATTEMPTS) {
        throw new RecordNotStoredError(`event ${event.provider}/${event.eventId} was neither inserted nor found after ${attempt} attempts`);
      }
    }
  }

  /**
   * Through RECORD_EVENT_PROCEDURE where the store has it (one round trip), otherwise the batch's
   * statements for one row.
   */
  private async insertOne(request: RecordRequest): Promise<RecordResult | null> {
    if (this.backend.recordsAloneInOneCall) return recordByCall(this.ackDb, request);
    return (await recordBatch(this.ackDb, [request], { kind: 'returning', insert: this.insertNewEvents }))[0]!;
  }
}

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
async function recordByCall(db: Kysely<InboxDatabase>, request: RecordRequest): Promise<RecordResult | null> {
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
