import { randomUUID } from 'node:crypto';
import type { ExpressionBuilder, ExpressionOrFactory, Kysely, Selectable, SqlBool } from 'kysely';
import { LeaseLostError } from '../errors.js';
import type { ProviderName, VerifiedEvent } from '../providers/provider.js';
import { fromDbTime, toDbTime, type DbTime, type EventStatus, type InboxDatabase, type WebhookEventsTable } from './schema.js';
import type { BusinessTransaction, ClaimedEvent, Lease, RecordResult } from './store.js';

/**
 * The store's writes for many callers at once (see Batcher): one multi-row insert for the events
 * being received, one conditional update for the claims, one transaction for the completions. Each
 * function returns one result per request, in request order.
 */

export interface RecordRequest {
  event: VerifiedEvent;
  receivedAt: DbTime;
}

/**
 * Another writer (a concurrent batch, another process) inserted one of the batch's events between
 * its read and its insert: which rows are the batch's own is no longer known, so it rolls back and
 * its events are recorded one by one instead.
 */
export class ConcurrentInsertError extends Error {}

const keyOf = (provider: string, eventId: string) => `${provider}\u0000${eventId}`;

function groupBy<T, K>(items: T[], keyOfItem: (item: T) => K): Map<K, T[]> {
  const groups = new Map<K, T[]>();
  for (const item of items) {
    const key = keyOfItem(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
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
      .values(
        missing.map(({ event, receivedAt }) => ({
          provider: event.provider,
          event_id: event.eventId,
          event_type: event.eventType,
          payload: event.payload,
          headers: JSON.stringify(event.headers),
          status: 'received' as const,
          attempts: 0,
          next_attempt_at: receivedAt,
          created_at: receivedAt,
        })),
      )
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

export interface ClaimRequest {
  id: number;
  owner: string;
  leaseMs: number;
}

/**
 * Takes the leases of many events with one conditional UPDATE and reads them with one SELECT. Every
 * event claimed by the statement carries its token; the fence checks id and token together, so a
 * shared token still fences each event on its own. When an id is asked for twice, one caller wins.
 * Takeovers (processing under an expired lease) are a second UPDATE with a token of their own, only
 * for the ids the first did not take, so a takeover is known as one (metrics and logs).
 */
export async function claimBatch(db: Kysely<InboxDatabase>, now: Date, requests: ClaimRequest[]): Promise<Array<ClaimedEvent | null>> {
  const results: Array<ClaimedEvent | null> = requests.map(() => null);
  const groups = groupBy([...requests.keys()], (index) => `${requests[index]!.owner}\u0000${requests[index]!.leaseMs}`);
  const dueAt = toDbTime(now);
  for (const indexes of groups.values()) {
    const { owner, leaseMs } = requests[indexes[0]!]!;
    const ids = [...new Set(indexes.map((i) => requests[i]!.id))];
    const expiresAt = new Date(now.getTime() + leaseMs);
    const takeLease = async (token: string, due: ExpressionOrFactory<InboxDatabase, 'webhook_events', SqlBool>) => {
      const claimed = await db
        .updateTable('webhook_events')
        .set((eb) => ({
          status: 'processing',
          attempts: eb('attempts', '+', 1),
          lease_owner: owner,
          lease_token: token,
          lease_expires_at: toDbTime(expiresAt),
          next_attempt_at: toDbTime(expiresAt),
        }))
        .where('id', 'in', ids)
        .where(due)
        .executeTakeFirst();
      return Number(claimed.numUpdatedRows);
    };
    const token = randomUUID();
    const takeoverToken = randomUUID();
    let taken = await takeLease(token, (eb) => eb.or([eb('status', '=', 'received'), eb.and([eb('status', '=', 'failed'), eb('next_attempt_at', '<=', dueAt)])]));
    if (taken < ids.length) taken += await takeLease(takeoverToken, (eb) => eb.and([eb('status', '=', 'processing'), eb('next_attempt_at', '<=', dueAt)]));
    if (taken === 0) continue;
    const rows = await db.selectFrom('webhook_events').selectAll().where('id', 'in', ids).where('lease_token', 'in', [token, takeoverToken]).execute();
    const byId = new Map(rows.map((row) => [row.id, row]));
    for (const index of indexes) {
      const row = byId.get(requests[index]!.id);
      if (!row) continue;
      byId.delete(row.id);
      const lease: Lease = { id: row.id, owner, token: row.lease_token!, expiresAt, attempts: row.attempts };
      results[index] = claimedEvent(row, lease, row.lease_token === takeoverToken);
    }
  }
  return results;
}

function claimedEvent(row: Selectable<WebhookEventsTable>, lease: Lease, takeover: boolean): ClaimedEvent {
  return {
    lease,
    takeover,
    event: {
      id: row.id,
      provider: row.provider as ProviderName,
      eventId: row.event_id,
      eventType: row.event_type,
      payload: JSON.parse(row.payload) as unknown,
      headers: JSON.parse(row.headers) as Record<string, string>,
      attempts: row.attempts,
      createdAt: fromDbTime(row.created_at),
    },
  };
}

export interface CompletionRequest {
  lease: Lease;
  work: (tx: BusinessTransaction) => Promise<string>;
}

/** Marks the event processed if the lease still holds, as the last statement of its work. */
async function fence(tx: BusinessTransaction, lease: Lease, now: DbTime, outcome: string): Promise<void> {
  const fenced = await tx
    .updateTable('webhook_events')
    .set({ status: 'processed', outcome, processed_at: now, lease_token: null, lease_expires_at: null, next_attempt_at: null, last_error: null })
    .where('id', '=', lease.id)
    .where('lease_token', '=', lease.token)
    .where('status', '=', 'processing')
    .where('lease_expires_at', '>', now)
    .executeTakeFirst();
  if (fenced.numUpdatedRows !== 1n) throw new LeaseLostError(lease.id);
}

/** A unit of a completion batch failed: the batch rolled back, and its events complete one by one. */
export class BatchUnitFailedError extends Error {}

/**
 * Runs the work of many events in ONE transaction and commits them together. Optimistic: no
 * savepoint per event (two round trips each); if one event's work fails or its lease is lost, the
 * whole batch rolls back with BatchUnitFailedError, and the caller runs each event in a transaction
 * of its own, so the failure stays with its event. A batch of one throws the event's own error.
 */
export async function completeBatch(db: Kysely<InboxDatabase>, clock: () => Date, requests: CompletionRequest[]): Promise<string[]> {
  // READ COMMITTED (MySQL; SQLite has one writer and ignores it): every statement of a later event
  // sees rows committed meanwhile by other batches, not a snapshot taken at the batch's first read,
  // and InnoDB takes no gap locks, so parallel batches do not deadlock on neighbouring keys.
  return db.transaction().setIsolationLevel('read committed').execute(async (tx) => {
    const outcomes: string[] = [];
    for (const { lease, work } of requests) {
      try {
        const outcome = await work(tx);
        await fence(tx, lease, toDbTime(clock()), outcome);
        outcomes.push(outcome);
      } catch (error) {
        if (requests.length === 1) throw error;
        throw new BatchUnitFailedError(`event ${lease.id} of a batch of ${requests.length} failed`, { cause: error });
      }
    }
    return outcomes;
  });
}
