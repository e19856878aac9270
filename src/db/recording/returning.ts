import type { Kysely } from 'kysely';
import { compiledRowsStatement, compiledValuesStatement } from '../compiled-statement.js';
import type { InboxDatabase } from '../schema.js';
import { outcomeOf } from './known-events.js';
import { NEW_EVENT_COLUMNS, newEventRow, newEventSource, type InsertedRow, type NewBodyRow, type NewEventRow } from './new-event.js';
import { eventKey, type BatchInsert } from './record-path.js';
import { assertWhole, bodiesOf, storedPayloadBytes, type StoredBody } from './stored-whole.js';

/**
 * The statements of a record batch where the database has INSERT ... RETURNING, compiled once: the
 * events (a SELECT per event joined by UNION ALL, so that the archive's keys can be checked) and
 * their bodies (a VALUES list). They run as compiled queries, never through the builder's `execute`:
 * kysely's MySQL adapter does not claim RETURNING, which MariaDB has.
 */
export function newEventsInsert(db: Kysely<InboxDatabase>) {
  return {
    events: compiledRowsStatement<NewEventRow, ReturnType<typeof newEventSource>, InsertedRow, InboxDatabase>(
      db,
      newEventSource,
      (db, source) => db.insertInto('webhook_events').orIgnore().columns(NEW_EVENT_COLUMNS).expression(source).returning(['id', 'provider', 'event_id']),
      ' union all ',
    ),
    bodies: newBodiesInsert(db),
  };
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
 * Where the database has INSERT ... RETURNING (SQLite, MariaDB 10.5 and later), a batch is one
 * transaction: a multi-row INSERT IGNORE of every event not archived, returning the rows it inserted,
 * and one insert of their bodies, returning the size of each stored payload; then one read for the
 * events it did not insert. `insert`: its statements, compiled for `db` unless given.
 */
export function returningBatch(db: Kysely<InboxDatabase>, insert: NewEventsInsert = newEventsInsert(db)): BatchInsert {
  return {
    kind: 'returning',
    minBatch: 2,
    async insert(unique) {
      const created = await db.transaction().execute(async (tx) => {
        const { rows } = await insert.events(unique.map(newEventRow), tx);
        if (rows.length === 0) return new Map<string, number>();
        const { bodies, events } = bodiesOf(unique, rows);
        assertWhole(bodies, events, (await insert.bodies(bodies, tx)).rows);
        return new Map(rows.map((row) => [eventKey(row.provider, row.event_id), Number(row.id)]));
      });
      return outcomeOf(db, unique, created);
    },
  };
}
