import type { Kysely, Selectable } from 'kysely';
import type { InboxDatabase, WebhookEventBodiesTable, WebhookEventsTable } from './schema.js';

/** A whole stored event: its row with the payload and headers of its body row. */
export type EventRow = Selectable<WebhookEventsTable> & Pick<Selectable<WebhookEventBodiesTable>, 'payload' | 'headers'>;

/**
 * Every column of `webhook_events`, named: a statement that says `*` is never held prepared on
 * PostgreSQL (postgres/prepared-pool.ts), and the claim reads whole events at every batch. `satisfies`
 * fails to compile when the table gains a column this list lacks.
 */
const EVENT_COLUMN_NAMES = {
  id: true,
  provider: true,
  event_id: true,
  event_type: true,
  status: true,
  attempts: true,
  lease_owner: true,
  lease_token: true,
  lease_expires_at: true,
  next_attempt_at: true,
  last_error: true,
  outcome: true,
  outcome_detail: true,
  created_at: true,
  processed_at: true,
  payment_id: true,
  source: true,
  claimed_at: true,
} satisfies Record<keyof WebhookEventsTable, true>;

export const EVENT_COLUMNS = (Object.keys(EVENT_COLUMN_NAMES) as Array<keyof WebhookEventsTable>).map((column) => `webhook_events.${column}` as const);

/**
 * Whole events, for a reader that needs their payload or headers; filter on the event's columns as on
 * webhook_events alone (the body row has no column of the same name). Every event has its body: the
 * record, the restore and the copy write both in one transaction.
 */
export function selectEventRows(db: Kysely<InboxDatabase>) {
  return db
    .selectFrom('webhook_events')
    .innerJoin('webhook_event_bodies', 'webhook_event_bodies.event_row_id', 'webhook_events.id')
    .select([...EVENT_COLUMNS, 'webhook_event_bodies.payload', 'webhook_event_bodies.headers']);
}
