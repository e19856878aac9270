import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import { selectEventRows } from '../db/event-rows.js';
import type { AttemptOutcome, InboxDatabase, WebhookEventsTable } from '../db/schema.js';
import { OperationError } from '../ops/errors.js';
import { paymentDetail, type PaymentDetail } from '../ops/payment-detail.js';
import type { AdminAction } from './audit.js';
import { eventListItem, isoTime, type EventListItem } from './event-list.js';
import { paymentView, type PaymentView } from './payment-view.js';

/** Stored headers that prove authenticity: kept for re-verification, never shown. */
const SIGNATURE_HEADER = /signature|^authorization$|hash/i;

export interface TimelineEntry {
  at: string;
  /** When it ended, for a step that took time (an attempt, a replay). */
  until: string | null;
  what: string;
  /** Who: an attempt's worker (its lease owner), a replay's actor. */
  by: string | null;
  detail: string | null;
}

/** One processing attempt: those that did not succeed are kept in event_attempts, the others read from the event. */
export interface AttemptView {
  attempt: number;
  /** The worker (lease owner), when known. */
  owner: string | null;
  /** Null when not known (an attempt from before these were recorded). */
  startedAt: string | null;
  /** Null while it runs. */
  endedAt: string | null;
  outcome: AttemptOutcome | 'processed' | 'running';
  /** Cut to EVENT_ATTEMPT_ERROR_MAX characters when it was written. */
  error: string | null;
}

/** Attempt rows read per event: retries are bounded by MAX_ATTEMPTS, and only replays add more. */
const ATTEMPTS_SHOWN = 200;

/** Everything the event detail shows (GET /admin/api/events/:id). */
export interface EventView extends EventListItem {
  nextAttemptAt: string | null;
  lease: { owner: string | null; expiresAt: string | null };
  outcome: string | null;
  /** The payload text exactly as received (PayU forms normalised to JSON at receipt). */
  payload: string;
  /** The payload parsed and indented, or null when it is not JSON. */
  payloadPretty: string | null;
  headers: Record<string, string>;
  /** Every attempt, oldest first. */
  attemptLog: AttemptView[];
  /** Received, each attempt, processed, each replay: in time order. */
  timeline: TimelineEntry[];
  replays: Array<{ actor: string; reason: string; requestedAt: string; previousStatus: string; result: string | null; finishedAt: string | null }>;
  payment: PaymentView | null;
  outbox: PaymentDetail['outbox'];
  actions: AdminAction[];
}

const iso = (value: string | null) => (value === null ? null : isoTime(value));

function pretty(payload: string): string | null {
  try {
    return JSON.stringify(JSON.parse(payload), null, 2);
  } catch {
    return null;
  }
}

/** The event with row id `id`, or null. `actions`: the audit rows about it, newest first. */
export async function eventView(db: Kysely<InboxDatabase>, clock: Clock, coursePlatform: boolean, id: number, actions: AdminAction[]): Promise<EventView | null> {
  const row = await selectEventRows(db).where('id', '=', id).executeTakeFirst();
  if (!row) return null;
  const replays = await db.selectFrom('event_replays').selectAll().where('event_row_id', '=', id).orderBy('id').execute();
  let payment: PaymentDetail | null = null;
  if (row.payment_id !== null) {
    try {
      payment = await paymentDetail(db, clock, row.provider, row.payment_id, coursePlatform);
    } catch (error) {
      if (!(error instanceof OperationError)) throw error;
    }
  }
  const headers = Object.fromEntries(Object.entries(JSON.parse(row.headers) as Record<string, string>).filter(([name]) => !SIGNATURE_HEADER.test(name)));
  const attemptLog = await attemptsOf(db, row);
  // Pushed in the order that settles ties of one millisecond: a replay is asked before the attempt it
  // runs, and an attempt ends before the event is processed and before the replay that ran it finishes.
  const timeline: TimelineEntry[] = [{ at: iso(row.created_at)!, until: null, what: 'received', by: null, detail: null }];
  for (const replay of replays) {
    timeline.push({
      at: iso(replay.requested_at)!,
      until: iso(replay.finished_at),
      what: 'replay',
      by: replay.actor,
      detail: `${replay.reason} (before: ${replay.previous_status} after ${replay.previous_attempts} attempt${replay.previous_attempts === 1 ? '' : 's'})`,
    });
  }
  for (const attempt of attemptLog) {
    timeline.push({
      at: attempt.startedAt ?? attempt.endedAt ?? iso(row.created_at)!,
      until: attempt.endedAt,
      what: `attempt ${attempt.attempt}: ${attempt.outcome.replace('_', ' ')}`,
      by: attempt.owner,
      detail: attempt.error,
    });
  }
  if (row.processed_at) timeline.push({ at: iso(row.processed_at)!, until: null, what: 'processed', by: null, detail: row.outcome });
  for (const replay of replays) {
    if (replay.finished_at) timeline.push({ at: iso(replay.finished_at)!, until: null, what: 'replay finished', by: replay.actor, detail: replay.result });
  }
  timeline.sort((a, b) => a.at.localeCompare(b.at)); // stable: ties keep the order above
  return {
    ...eventListItem(row),
    nextAttemptAt: iso(row.next_attempt_at),
    lease: { owner: row.lease_owner, expiresAt: iso(row.lease_expires_at) },
    outcome: row.outcome,
    payload: row.payload,
    payloadPretty: pretty(row.payload),
    headers,
    attemptLog,
    timeline,
    replays: replays.map((r) => ({
      actor: r.actor,
      reason: r.reason,
      requestedAt: iso(r.requested_at)!,
      previousStatus: r.previous_status,
      result: r.result,
      finishedAt: iso(r.finished_at),
    })),
    payment: payment?.payment ? paymentView(payment.payment) : null,
    outbox: payment?.outbox ?? [],
    actions,
  };
}

/**
 * The event's attempts: those that failed or lost their lease, as event_attempts recorded them, and
 * the latest one from the row itself when it succeeded or still runs (those are never written apart).
 */
async function attemptsOf(db: Kysely<InboxDatabase>, row: Selectable<WebhookEventsTable>): Promise<AttemptView[]> {
  const rows = await db.selectFrom('event_attempts').selectAll().where('event_row_id', '=', row.id).orderBy('id').limit(ATTEMPTS_SHOWN).execute();
  const attempts: AttemptView[] = rows.map((a) => ({
    attempt: a.attempt,
    owner: a.owner,
    startedAt: iso(a.started_at),
    endedAt: iso(a.ended_at),
    outcome: a.outcome,
    error: a.error,
  }));
  if (row.attempts > 0 && (row.status === 'processed' || row.status === 'processing')) {
    attempts.push({
      attempt: row.attempts,
      owner: row.lease_owner,
      startedAt: iso(row.claimed_at),
      endedAt: row.status === 'processed' ? iso(row.processed_at) : null,
      outcome: row.status === 'processed' ? 'processed' : 'running',
      error: null,
    });
  }
  return attempts;
}
