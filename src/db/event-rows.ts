import type { Kysely, Selectable } from 'kysely';
import type { InboxDatabase, WebhookEventBodiesTable, WebhookEventsTable } from './schema.js';

/** A whole stored event: its row with the payload and headers of its body row. */
export type EventRow = Selectable<WebhookEventsTable> & Pick<Selectable<WebhookEventBodiesTable>, 'payload' | 'headers'>;

/**
 * Whole events, for a reader that needs their payload or headers; filter on the event's columns as on
 * webhook_events alone (the body row has no column of the same name). Every event has its body: the
 * record, the restore and the copy write both in one transaction.
 */
export function selectEventRows(db: Kysely<InboxDatabase>) {
  return db
    .selectFrom('webhook_events')
    .innerJoin('webhook_event_bodies', 'webhook_event_bodies.event_row_id', 'webhook_events.id')
    .selectAll('webhook_events')
    .select(['webhook_event_bodies.payload', 'webhook_event_bodies.headers']);
}
