import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import type { InboxDatabase } from '../db/schema.js';
import { OperationError } from '../ops/errors.js';
import { paymentDetail, type PaymentDetail } from '../ops/payment-detail.js';
import type { AdminAction } from './audit.js';
import { eventListItem, isoTime, type EventListItem } from './event-list.js';

/** Stored headers that prove authenticity: kept for re-verification, never shown. */
const SIGNATURE_HEADER = /signature|^authorization$|hash/i;

export interface TimelineEntry {
  at: string;
  what: string;
  detail: string | null;
}

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
  timeline: TimelineEntry[];
  replays: Array<{ actor: string; reason: string; requestedAt: string; previousStatus: string; result: string | null; finishedAt: string | null }>;
  payment: PaymentDetail['payment'];
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
  const row = await db.selectFrom('webhook_events').selectAll().where('id', '=', id).executeTakeFirst();
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
  const timeline: TimelineEntry[] = [{ at: iso(row.created_at)!, what: 'received', detail: null }];
  for (const replay of replays) {
    timeline.push({ at: iso(replay.requested_at)!, what: `replayed by ${replay.actor}`, detail: replay.reason });
    if (replay.finished_at) timeline.push({ at: iso(replay.finished_at)!, what: 'replay finished', detail: replay.result });
  }
  if (row.attempts > 0) timeline.push({ at: iso(row.processed_at ?? row.lease_expires_at ?? row.created_at)!, what: `attempt ${row.attempts} (latest)`, detail: row.last_error });
  if (row.processed_at) timeline.push({ at: iso(row.processed_at)!, what: 'processed', detail: row.outcome });
  timeline.sort((a, b) => a.at.localeCompare(b.at));
  return {
    ...eventListItem(row),
    nextAttemptAt: iso(row.next_attempt_at),
    lease: { owner: row.lease_owner, expiresAt: iso(row.lease_expires_at) },
    outcome: row.outcome,
    payload: row.payload,
    payloadPretty: pretty(row.payload),
    headers,
    timeline,
    replays: replays.map((r) => ({
      actor: r.actor,
      reason: r.reason,
      requestedAt: iso(r.requested_at)!,
      previousStatus: r.previous_status,
      result: r.result,
      finishedAt: iso(r.finished_at),
    })),
    payment: payment?.payment ?? null,
    outbox: payment?.outbox ?? [],
    actions,
  };
}
