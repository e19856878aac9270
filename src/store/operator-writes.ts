import type { Insertable, Kysely } from 'kysely';
import type { EventRow } from '../db/event-rows.js';
import { toDbTime, type InboxDatabase, type WebhookEventBodiesTable, type WebhookEventsTable } from '../db/schema.js';

/**
 * The writes an operator's tools make to events (a replay's reset, the archive's removal, the
 * restore), beside the pipeline's own. Like the pipeline's, each is one conditional statement (or
 * one transaction) that loses to a concurrent change rather than overwriting it.
 */

/** An event's state as a replay read it: it is made due again only while it still is so. */
export type SeenEvent = Pick<EventRow, 'id' | 'status' | 'attempts' | 'next_attempt_at' | 'processed_at'>;

/**
 * Makes a failed or processed event due again for a replay (status received, no attempt, no lease)
 * unless it changed since `seen`, and marks the replay's row (`replayId`, which keeps the processing
 * the reset replaces) made due, in one transaction. False: a concurrent replay, retry or completion
 * changed it first.
 */
export async function makeDueForReplay(db: Kysely<InboxDatabase>, seen: SeenEvent, replayId: number, now: Date): Promise<boolean> {
  const at = toDbTime(now);
  return db.transaction().execute(async (tx) => {
    const reset = await tx
      .updateTable('webhook_events')
      .set({ status: 'received', attempts: 0, next_attempt_at: at, lease_owner: null, lease_token: null, lease_expires_at: null })
      .where('id', '=', seen.id)
      .where('status', '=', seen.status)
      .where('attempts', '=', seen.attempts)
      .where((eb) => (seen.next_attempt_at === null ? eb('next_attempt_at', 'is', null) : eb('next_attempt_at', '=', seen.next_attempt_at)))
      .where((eb) => (seen.processed_at === null ? eb('processed_at', 'is', null) : eb('processed_at', '=', seen.processed_at)))
      .executeTakeFirst();
    if (reset.numUpdatedRows !== 1n) return false;
    // In the reset's transaction: a processing leaves the row only as it is kept in the replay's.
    await tx.updateTable('event_replays').set({ made_due_at: at }).where('id', '=', replayId).execute();
    return true;
  });
}

/**
 * Removes events whose archive line was read back intact (`rows`, as they were when compared), keeping
 * their keys under `archiveFile` first: the keys are committed before the rows go, so a redelivery
 * always finds one or the other. A row that is no longer processed stays. Returns how many went.
 */
export async function removeArchivedEvents(db: Kysely<InboxDatabase>, rows: EventRow[], archiveFile: string, now: Date): Promise<number> {
  const archivedAt = toDbTime(now);
  await db
    .insertInto('archived_event_keys')
    .orIgnore()
    .values(
      rows.map((row) => ({
        provider: row.provider,
        event_id: row.event_id,
        event_row_id: row.id,
        event_created_at: row.created_at,
        archive_file: archiveFile,
        archived_at: archivedAt,
      })),
    )
    .execute();
  const removed = await db.transaction().execute(async (tx) => {
    const ids = rows.map((row) => row.id);
    const events = await tx.deleteFrom('webhook_events').where('id', 'in', ids).where('status', '=', 'processed').executeTakeFirst();
    // Its body and failed attempts go with the event (the archived line keeps its payload, attempt
    // count and outcome); those of an event that changed since and stays are kept with it. Its
    // replays stay, and with them the processings they replaced: restored under its own id, the
    // event shows every processing again.
    for (const table of ['webhook_event_bodies', 'event_attempts'] as const) {
      await tx
        .deleteFrom(table)
        .where('event_row_id', 'in', ids)
        .where((eb) => eb.not(eb.exists(eb.selectFrom('webhook_events').select('webhook_events.id').whereRef('webhook_events.id', '=', `${table}.event_row_id`))))
        .execute();
    }
    return events;
  });
  return Number(removed.numDeletedRows);
}

/** An archived event as it is put back: its row as it was (same id, status, outcome) and its body. */
export type RestoredEvent = Omit<Insertable<WebhookEventsTable>, 'next_attempt_at' | 'lease_owner' | 'lease_token' | 'lease_expires_at'> &
  Pick<Insertable<WebhookEventBodiesTable>, 'payload' | 'headers'> & { id: number };

/** Puts an archived event back with its body, in one transaction; false when its row is already there. */
export async function restoreEvent(db: Kysely<InboxDatabase>, event: RestoredEvent): Promise<boolean> {
  const { payload, headers, ...row } = event;
  return db.transaction().execute(async (tx) => {
    const inserted = await tx
      .insertInto('webhook_events')
      .orIgnore()
      .values({ ...row, next_attempt_at: null, lease_owner: null, lease_token: null, lease_expires_at: null })
      .executeTakeFirst();
    if (inserted.numInsertedOrUpdatedRows !== 1n) return false;
    await tx.insertInto('webhook_event_bodies').values({ event_row_id: event.id, payload, headers }).execute();
    return true;
  });
}
