import type { Kysely } from 'kysely';
import { toEventState } from '../store/event-queries.js';
import { selectEventRows, type EventRow } from '../db/event-rows.js';
import { fromDbTime, type EventStatus, type InboxDatabase } from '../db/schema.js';
import { eventsMatching, providersToSearch, type EventFilter } from '../store/event-filter.js';
import type { EventState } from '../store/inbox-store.js';
import { shownHeaders, shownPayload } from '../model/secrets.js';
import { OperationError } from './errors.js';
import { processingsOf, replaysOf, type Processing } from './event-history.js';

export const EVENT_STATUSES: readonly EventStatus[] = ['received', 'processing', 'processed', 'failed'];

/** Which events (see EventFilter) and at most how many. */
export interface EventSelection extends EventFilter {
  limit: number;
}

/**
 * Events matching the filter, newest first (an operator looks for what just happened) unless `order`
 * says oldest; `more` says the limit cut the list.
 */
export async function findEvents(db: Kysely<InboxDatabase>, filter: EventSelection, order: 'newest' | 'oldest' = 'newest'): Promise<{ events: EventRow[]; more: boolean }> {
  const query = selectEventRows(db).where(eventsMatching(filter));
  const rows = await query
    .orderBy('id', order === 'newest' ? 'desc' : 'asc')
    .limit(filter.limit + 1)
    .execute();
  return { events: rows.slice(0, filter.limit), more: rows.length > filter.limit };
}

/**
 * The event an operator means: a provider event id ("evt_...", "pay_...:success"), or the row id
 * shown by `events list`. A provider event id found under several providers needs `provider`.
 */
export async function resolveEvent(db: Kysely<InboxDatabase>, ref: string, provider?: string): Promise<EventRow> {
  const query = selectEventRows(db).where('provider', 'in', providersToSearch(provider)).where('event_id', '=', ref);
  const matches = await query.limit(2).execute();
  if (matches.length > 1) throw new OperationError(`event "${ref}" exists for several providers; add --provider`, 'ambiguous_event');
  if (matches[0]) return matches[0];
  if (/^\d+$/.test(ref)) {
    const byRowId = await selectEventRows(db).where('id', '=', Number(ref)).executeTakeFirst();
    if (byRowId && (!provider || byRowId.provider === provider)) return byRowId;
  }
  const archived = await db.selectFrom('archived_event_keys').select(['archive_file']).where('event_id', '=', ref).executeTakeFirst();
  const hint = archived ? ` (it was archived to ${archived.archive_file}; see "archive search")` : '';
  throw new OperationError(`no event "${ref}"${provider ? ` from ${provider}` : ''}${hint}`, 'event_not_found');
}

export interface ReplayRecord {
  actor: string;
  reason: string;
  requestedAt: Date;
  previousStatus: string;
  result: string | null;
}

export interface EventDetail extends EventState {
  leaseExpiresAt: Date | null;
  /** The stored headers but those that prove authenticity (shownHeaders). */
  headers: Record<string, string>;
  /** The stored payload text, byte for byte, unless a field of it is secret (shownPayload). */
  payload: string;
  replays: ReplayRecord[];
  /** Every processing, oldest first: the first and each after a replay. */
  processings: Processing[];
}

export async function eventDetail(db: Kysely<InboxDatabase>, ref: string, provider?: string): Promise<EventDetail> {
  const row = await resolveEvent(db, ref, provider);
  const replays = await replaysOf(db, row.id);
  return {
    ...toEventState(row),
    leaseExpiresAt: row.lease_expires_at ? fromDbTime(row.lease_expires_at) : null,
    headers: shownHeaders(row.headers),
    payload: shownPayload(row.payload),
    processings: processingsOf(row, replays),
    replays: replays.map((r) => ({
      actor: r.actor,
      reason: r.reason,
      requestedAt: fromDbTime(r.requested_at),
      previousStatus: r.previous_status,
      result: r.result,
    })),
  };
}
