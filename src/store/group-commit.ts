import type { ExpressionBuilder, Kysely } from 'kysely';
import type { VerifiedEvent } from '../providers/provider.js';
import type { DbTime, EventStatus, InboxDatabase } from './schema.js';
import { groupBy } from './batcher.js';
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

const keyOf = (provider: string, eventId: string) => `${provider}\u0000${eventId}`;

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

async function rowsByKey(db: Kysely<InboxDatabase>, events: VerifiedEvent[]): Promise<Map<string, KnownRow>> {
  const rows = await db.selectFrom('webhook_events').select(['id', 'provider', 'event_id', 'status']).where(whereKeys(events)).execute();
  return new Map(rows.map((row) => [keyOf(row.provider, row.event_id), { id: row.id, status: row.status }]));
}

/**
 * Events already known: stored, or archived (their key stays behind, with the row id they had). The
 * archive commits the key before it deletes the row, so one read of both finds one or the other.
 */
async function knownByKey(db: Kysely<InboxDatabase>, events: VerifiedEvent[]): Promise<Map<string, KnownRow>> {
  const known = await rowsByKey(db, events);
  const unknown = events.filter((e) => !known.has(keyOf(e.provider, e.eventId)));
  if (unknown.length === 0) return known;
  const archived = await db.selectFrom('archived_event_keys').select(['event_row_id', 'provider', 'event_id']).where(whereKeys(unknown)).execute();
  for (const row of archived) known.set(keyOf(row.provider, row.event_id), { id: Number(row.event_row_id), status: 'processed' });
  return known;
}

/**
 * Records many events in one transaction: read which already exist (or were archived), insert the others in one
 * multi-row INSERT IGNORE, read back their ids. A multi-row insert's affected-row count says how
 * many rows were new but not which, so the read before the insert decides, and the count only
 * confirms that nobody else inserted one of them in between (otherwise ConcurrentInsertError).
 * Within the batch, the first request for an event records it; the others are its duplicates.
 */
export async function recordBatch(db: Kysely<InboxDatabase>, requests: RecordRequest[]): Promise<RecordResult[]> {
  const firstByKey = new Map<string, RecordRequest>();
  for (const request of requests) {
    const key = keyOf(request.event.provider, request.event.eventId);
    if (!firstByKey.has(key)) firstByKey.set(key, request);
  }
  const unique = [...firstByKey.values()];
  const { existing, created } = await db.transaction().execute(async (tx) => {
    const existing = await knownByKey(tx, unique.map((r) => r.event));
    // Sorted, so concurrent batches lock index entries in the same order and cannot deadlock.
    const missing = unique.filter((r) => !existing.has(keyOf(r.event.provider, r.event.eventId))).sort((a, b) => compare(a.event, b.event));
    if (missing.length === 0) return { existing, created: new Map<string, KnownRow>() };
    const inserted = await tx
      .insertInto('webhook_events')
      .orIgnore()
      .values(missing.map(newEventRow))
      .executeTakeFirst();
    if (Number(inserted.numInsertedOrUpdatedRows) !== missing.length) throw new ConcurrentInsertError('an event of the batch was inserted concurrently');
    return { existing, created: await rowsByKey(tx, missing.map((r) => r.event)) };
  });

  return requests.map((request): RecordResult => {
    const key = keyOf(request.event.provider, request.event.eventId);
    const own = created.get(key);
    if (own) return { outcome: firstByKey.get(key) === request ? 'recorded' : 'duplicate', id: own.id, status: own.status };
    const row = existing.get(key)!;
    return { outcome: 'duplicate', id: row.id, status: row.status };
  });
}

function compare(a: VerifiedEvent, b: VerifiedEvent): number {
  if (a.provider !== b.provider) return a.provider < b.provider ? -1 : 1;
  return a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0;
}
