import { sql, type Kysely } from 'kysely';
import { RecordNotStoredError } from '../../errors.js';
import type { VerifiedEvent } from '../../model/delivery.js';
import type { InboxDatabase } from '../schema.js';
import { newBodyRow, type InsertedRow, type NewBodyRow } from './new-event.js';
import { eventKey, type RecordRequest } from './record-path.js';

/**
 * The payload's size as the database stored it, in bytes (octet_length in every store), read in the
 * transaction that inserts the body: an acknowledgement is given only for a payload stored whole.
 */
export const storedPayloadBytes = sql<number | string>`octet_length(${sql.ref('payload')})`.as('payload_bytes');

export interface StoredBody {
  event_row_id: number;
  payload_bytes: number | string;
}

export function incompleteError(event: VerifiedEvent, storedBytes: number): RecordNotStoredError {
  return new RecordNotStoredError(
    `event ${event.provider}/${event.eventId}: the database stored ${storedBytes} of its ${Buffer.byteLength(event.payload)} payload bytes; not acknowledged`,
  );
}

/** The body rows of the events a batch inserted, and each row's event by id. */
export function bodiesOf(unique: RecordRequest[], inserted: InsertedRow[]): { bodies: NewBodyRow[]; events: Map<number, VerifiedEvent> } {
  const byKey = new Map(unique.map((r) => [eventKey(r.event.provider, r.event.eventId), r.event]));
  const events = new Map(inserted.map((row) => [Number(row.id), byKey.get(eventKey(row.provider, row.event_id))!]));
  return { events, bodies: [...events].map(([id, event]) => newBodyRow(id, event)) };
}

/**
 * Throws, rolling the record's transaction back, unless each body was stored with its payload's size.
 * An event not acknowledged is delivered again by its provider.
 */
export function assertWhole(bodies: NewBodyRow[], events: Map<number, VerifiedEvent>, stored: StoredBody[]): void {
  const bytes = new Map(stored.map((row) => [Number(row.event_row_id), Number(row.payload_bytes)]));
  for (const body of bodies) {
    const storedBytes = bytes.get(body.event_row_id) ?? 0;
    if (storedBytes !== Buffer.byteLength(body.payload)) throw incompleteError(events.get(body.event_row_id)!, storedBytes);
  }
}

/** The stored payload sizes of the bodies of rows `ids`, where an insert did not answer them. */
export function storedBodies(db: Kysely<InboxDatabase>, ids: number[]): Promise<StoredBody[]> {
  return db.selectFrom('webhook_event_bodies').select(['event_row_id', storedPayloadBytes]).where('event_row_id', 'in', ids).execute();
}
