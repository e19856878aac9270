import type { Kysely } from 'kysely';
import { knownByKey, whereKeys } from '../recording/known-events.js';
import { newEventRow } from '../recording/new-event.js';
import { eventKey, type BatchInsert } from '../recording/record-path.js';
import { assertWhole, bodiesOf, storedBodies } from '../recording/stored-whole.js';
import type { InboxDatabase } from '../schema.js';

/**
 * Another writer (a concurrent batch, another process) inserted one of the batch's events between
 * its read and its insert: which rows are the batch's own is no longer known, so it rolls back and
 * its events are recorded one by one instead.
 */
export class ConcurrentInsertError extends Error {}

/** Without RETURNING a batch is a transaction of five round trips, worth it from a handful of events on. */
const MIN_TRANSACTION_BATCH = 4;

/**
 * Without RETURNING (MySQL): in one transaction, read which events exist (or were archived), insert
 * the others in one multi-row INSERT IGNORE, read back their ids, insert their bodies and read back
 * their payload sizes. A multi-row insert's affected-row count says how many rows were new but not
 * which, so the read before the insert decides, and the count only confirms that nobody else
 * inserted one of them in between (otherwise ConcurrentInsertError).
 */
export function transactionBatch(db: Kysely<InboxDatabase>): BatchInsert {
  return {
    kind: 'transaction',
    minBatch: MIN_TRANSACTION_BATCH,
    insert: (unique) =>
      db.transaction().execute(async (tx) => {
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
      }),
  };
}
