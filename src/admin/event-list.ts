import type { Kysely, Selectable } from 'kysely';
import { parseIsoTime } from '../config/duration.js';
import { olderThan, type KeysetPosition } from '../db/keyset.js';
import { fromDbTime, type DbTime, type EventStatus, type InboxDatabase, type WebhookEventsTable } from '../db/schema.js';
import { PROVIDER_NAMES } from '../model/delivery.js';
import { shownOutcome, type ShownOutcome } from '../model/outcome.js';
import { EVENT_STATUSES } from '../ops/event-lookup.js';
import { eventsMatching, type EventFilter } from '../store/event-filter.js';
import { AdminInputError, integer, oneOf, text, time, type Query } from './input.js';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;
/** Text search reads every payload in its window, so the window is bounded (bench/NOTES.md has its cost). */
export const SEARCH_WINDOW_DEFAULT_MS = 3600_000;
export const SEARCH_WINDOW_MAX_MS = 24 * 3600_000;

/** The list's filter: which events (a text search `q` within [from, to) only), how many, from where. */
export interface EventListFilter extends EventFilter {
  limit: number;
  /** Where the previous page ended: the last row's received time and id. */
  after?: KeysetPosition;
}

/** One event as the list shows it (the API's `events[]`); `outcome` and `outcomeDetail` are its latest processing's. */
export interface EventListItem extends ShownOutcome {
  id: number;
  provider: string;
  eventId: string;
  type: string;
  status: EventStatus;
  paymentId: string | null;
  receivedAt: string;
  attempts: number;
  processedAt: string | null;
  lastError: string | null;
}

export interface EventPage {
  events: EventListItem[];
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  nextCursor: string | null;
}

/** A stored time as the API shows it (ISO 8601, UTC). */
export const isoTime = (value: DbTime) => fromDbTime(value).toISOString();

const LISTED_COLUMNS = ['id', 'provider', 'event_id', 'event_type', 'status', 'payment_id', 'created_at', 'attempts', 'processed_at', 'last_error'] as const;
type ListedRow = Pick<Selectable<WebhookEventsTable>, (typeof LISTED_COLUMNS)[number]>;

/** An event row as the list, the payment and the detail show it, with its outcome as readers show it. */
export function eventListItem(row: ListedRow, shown: ShownOutcome): EventListItem {
  return {
    id: row.id,
    provider: row.provider,
    eventId: row.event_id,
    type: row.event_type,
    status: row.status,
    paymentId: row.payment_id,
    receivedAt: isoTime(row.created_at),
    attempts: row.attempts,
    processedAt: row.processed_at ? isoTime(row.processed_at) : null,
    lastError: row.last_error,
    outcome: shown.outcome,
    outcomeDetail: shown.outcomeDetail,
  };
}

/** An event row with its outcome as stored, as the list and the detail show it. */
export function storedEventListItem(row: ListedRow & Pick<Selectable<WebhookEventsTable>, 'outcome' | 'outcome_detail'>): EventListItem {
  return eventListItem(row, shownOutcome(row.outcome, row.outcome_detail));
}

export function encodeCursor(createdAt: DbTime, id: number): string {
  return Buffer.from(JSON.stringify([createdAt, id])).toString('base64url');
}

/** A `cursor` parameter as encodeCursor made it; anything else is a 400 naming it. */
export function decodeCursor(cursor: string): KeysetPosition {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    // A time the calendar has, as toDbTime writes it: the database is never asked to compare another.
    if (typeof at === 'string' && /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}\.\d{3}$/.test(at) && parseIsoTime(at) !== null && Number.isSafeInteger(id) && (id as number) > 0)
      return { at, id: id as number };
  } catch {
    // Refused below, like any other malformed cursor.
  }
  throw new AdminInputError('cursor', 'is not a cursor this API returned (pass nextCursor as it came)');
}

/** Reads and checks the list's query parameters; each bad one is a 400 naming it. `now` bounds the default search window. */
export function parseEventFilter(query: Query, now: Date): EventListFilter {
  const cursor = text(query, 'cursor', 300);
  const filter: EventListFilter = {
    provider: oneOf(query, 'provider', PROVIDER_NAMES),
    status: oneOf(query, 'status', EVENT_STATUSES),
    type: text(query, 'type'),
    paymentId: text(query, 'paymentId'),
    eventId: text(query, 'eventId'),
    email: text(query, 'email', 320),
    from: time(query, 'from'),
    to: time(query, 'to'),
    q: text(query, 'q', 200),
    limit: integer(query, 'limit', { min: 1, max: MAX_PAGE_SIZE, fallback: DEFAULT_PAGE_SIZE }),
    after: cursor === undefined ? undefined : decodeCursor(cursor),
  };
  if (filter.from && filter.to && filter.from >= filter.to) throw new AdminInputError('to', 'must be later than from');
  if (filter.q !== undefined) {
    if (filter.q.length < 3) throw new AdminInputError('q', 'must be at least 3 characters');
    filter.to ??= filter.from ? new Date(Math.min(filter.from.getTime() + SEARCH_WINDOW_DEFAULT_MS, now.getTime() + 1)) : now;
    filter.from ??= new Date(filter.to.getTime() - SEARCH_WINDOW_DEFAULT_MS);
    if (filter.to.getTime() - filter.from.getTime() > SEARCH_WINDOW_MAX_MS) throw new AdminInputError('q', 'searches a window of at most 24 hours: narrow from and to');
  }
  return filter;
}

/**
 * One page of events, newest first, by keyset on (created_at, id): each page starts where the last
 * ended, so a deep page costs what the first does (an index per filter, migration 0007).
 */
export async function listEvents(db: Kysely<InboxDatabase>, filter: EventListFilter): Promise<EventPage> {
  let query = db
    .selectFrom('webhook_events')
    .select([...LISTED_COLUMNS, 'outcome', 'outcome_detail'])
    .where(eventsMatching(filter));
  if (filter.after) query = query.where(olderThan('created_at', filter.after));
  const rows = await query
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(filter.limit + 1)
    .execute();
  const page = rows.slice(0, filter.limit);
  const last = page.at(-1);
  return {
    events: page.map(storedEventListItem),
    nextCursor: rows.length > filter.limit && last ? encodeCursor(last.created_at, last.id) : null,
  };
}
