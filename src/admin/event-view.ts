import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import { selectEventRows } from '../db/event-rows.js';
import type { AttemptOutcome, InboxDatabase, WebhookEventsTable } from '../db/schema.js';
import type { ShownOutcome } from '../model/outcome.js';
import type { DomainViews } from '../extension/compose-domains.js';
import { shownHeaders, shownPayload } from '../model/secrets.js';
import { processingsOf, replaysOf, type Processing } from '../ops/event-history.js';
import { OperationError } from '../ops/errors.js';
import { paymentDetail, type PaymentDetail } from '../ops/payment-detail.js';
import type { AdminAction } from './audit.js';
import { isoTime, storedEventListItem, type EventListItem } from './event-list.js';
import { paymentView, type PaymentView } from './payment-view.js';

export interface TimelineEntry {
  at: string;
  /** When it ended, for a step that took time (an attempt, a replay). */
  until: string | null;
  what: string;
  /** Who: an attempt's worker (its lease owner), a replay's actor. */
  by: string | null;
  detail: string | null;
}

/** One processing attempt: those that did not succeed are kept in event_attempts, the others read from the event and its replays. */
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

/** A Processing with its times as ISO 8601 text, as the rest of the view. */
export interface ProcessingView extends ShownOutcome {
  outcome: string;
  processedAt: string;
  startedAt: string | null;
  attempt: number;
  worker: string | null;
  replay: { actor: string; reason: string; requestedAt: string } | null;
}

/** Attempt rows read per event: retries are bounded by MAX_ATTEMPTS, and only replays add more. */
const ATTEMPTS_SHOWN = 200;

/** Everything the event detail shows (GET /admin/api/events/:id). */
export interface EventView extends EventListItem {
  nextAttemptAt: string | null;
  lease: { owner: string | null; expiresAt: string | null };
  /** The payload text exactly as received (PayU forms normalised to JSON at receipt), unless a field of it is secret (shownPayload). */
  payload: string;
  /** The payload parsed and indented, or null when it is not JSON. */
  payloadPretty: string | null;
  /** The stored headers but those that prove authenticity (shownHeaders). */
  headers: Record<string, string>;
  /** Every attempt, oldest first. */
  attemptLog: AttemptView[];
  /** Every processing, oldest first: the first and each after a replay, with the replay that asked for it. */
  processings: ProcessingView[];
  /** Received, each attempt, each processing, each replay: in time order. */
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

/** The event with row id `id`, or null. `actions`: the audit rows about it, newest first. `domains`: those in use. */
export async function eventView(db: Kysely<InboxDatabase>, clock: Clock, domains: DomainViews, id: number, actions: AdminAction[]): Promise<EventView | null> {
  const row = await selectEventRows(db).where('id', '=', id).executeTakeFirst();
  if (!row) return null;
  const replays = await replaysOf(db, id);
  let payment: PaymentDetail | null = null;
  if (row.payment_id !== null) {
    try {
      payment = await paymentDetail(db, clock, domains, row.provider, row.payment_id);
    } catch (error) {
      if (!(error instanceof OperationError)) throw error;
    }
  }
  const payload = shownPayload(row.payload);
  const processings = processingsOf(row, replays).map(processingView);
  const attemptLog = await attemptsOf(db, row, processings);
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
  for (const processing of processings) timeline.push({ at: processing.processedAt, until: null, what: 'processed', by: null, detail: processing.outcome });
  for (const replay of replays) {
    if (replay.finished_at) timeline.push({ at: iso(replay.finished_at)!, until: null, what: 'replay finished', by: replay.actor, detail: replay.result });
  }
  timeline.sort((a, b) => a.at.localeCompare(b.at)); // stable: ties keep the order above
  return {
    ...storedEventListItem(row),
    nextAttemptAt: iso(row.next_attempt_at),
    lease: { owner: row.lease_owner, expiresAt: iso(row.lease_expires_at) },
    payload,
    payloadPretty: pretty(payload),
    headers: shownHeaders(row.headers),
    attemptLog,
    processings,
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
 * The event's attempts: those that failed or lost their lease, as event_attempts recorded them, the
 * one of each processing, and the one that runs now (those that succeed or run are never written
 * apart). In the order they ended, the one that runs last.
 */
async function attemptsOf(db: Kysely<InboxDatabase>, row: Selectable<WebhookEventsTable>, processings: ProcessingView[]): Promise<AttemptView[]> {
  const rows = await db.selectFrom('event_attempts').selectAll().where('event_row_id', '=', row.id).orderBy('id').limit(ATTEMPTS_SHOWN).execute();
  const attempts: AttemptView[] = rows.map((a) => ({
    attempt: a.attempt,
    owner: a.owner,
    startedAt: iso(a.started_at),
    endedAt: iso(a.ended_at),
    outcome: a.outcome,
    error: a.error,
  }));
  for (const processing of processings) {
    attempts.push({ attempt: processing.attempt, owner: processing.worker, startedAt: processing.startedAt, endedAt: processing.processedAt, outcome: 'processed', error: null });
  }
  if (row.attempts > 0 && row.status === 'processing') {
    attempts.push({ attempt: row.attempts, owner: row.lease_owner, startedAt: iso(row.claimed_at), endedAt: null, outcome: 'running', error: null });
  }
  return attempts.sort((a, b) => (a.endedAt ?? '\uffff').localeCompare(b.endedAt ?? '\uffff')); // stable: ties keep the order above
}

function processingView(processing: Processing): ProcessingView {
  const { replay } = processing;
  return {
    ...processing,
    processedAt: processing.processedAt.toISOString(),
    startedAt: processing.startedAt?.toISOString() ?? null,
    replay: replay && { ...replay, requestedAt: replay.requestedAt.toISOString() },
  };
}
