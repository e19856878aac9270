import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import { toDbTime, type InboxDatabase } from '../db/schema.js';
import { formatDuration } from '../config/duration.js';
import type { EventRow } from './event-lookup.js';

export type StuckKind = 'expired_lease' | 'failed' | 'old_received';

export interface StuckEvent {
  kind: StuckKind;
  id: number;
  provider: string;
  eventId: string;
  eventType: string;
  attempts: number;
  lastError: string | null;
  /** Received at. */
  createdAt: string;
  /** Lease expiry (expired_lease) or next automatic retry (failed; null = none left). */
  dueAt: string | null;
  leaseOwner: string | null;
}

export interface StuckReport {
  checkedAt: string;
  olderThanMs: number;
  /** How many of each kind exist (the lists are capped at `listLimit`). */
  counts: Record<StuckKind, number>;
  events: StuckEvent[];
  total: number;
}

export const STUCK_KIND_LABELS: Record<StuckKind, string> = {
  expired_lease: 'processing with an expired lease',
  failed: 'failed',
  old_received: 'received and never processed',
};

/**
 * Events that need an operator, each kind one query on the status index: `processing` whose lease
 * expired (a worker died and nobody took over), `failed` (with attempts and last error; retries may be
 * scheduled or exhausted), and `received` older than the threshold (no worker is picking events up).
 */
export async function findStuck(db: Kysely<InboxDatabase>, clock: Clock, options: { olderThanMs: number; listLimit?: number }): Promise<StuckReport> {
  const now = clock.now();
  const nowDb = toDbTime(now);
  const limit = options.listLimit ?? 50;
  const base = () => db.selectFrom('webhook_events').selectAll();
  const queries: Record<StuckKind, ReturnType<typeof base>> = {
    expired_lease: base().where('status', '=', 'processing').where('lease_expires_at', '<=', nowDb),
    failed: base().where('status', '=', 'failed'),
    old_received: base()
      .where('status', '=', 'received')
      .where('created_at', '<', toDbTime(new Date(now.getTime() - options.olderThanMs))),
  };
  const report: StuckReport = { checkedAt: now.toISOString(), olderThanMs: options.olderThanMs, counts: { expired_lease: 0, failed: 0, old_received: 0 }, events: [], total: 0 };
  for (const kind of Object.keys(queries) as StuckKind[]) {
    const counted = await queries[kind]
      .clearSelect()
      .select((eb) => eb.fn.countAll<number | string>().as('n'))
      .executeTakeFirstOrThrow();
    report.counts[kind] = Number(counted.n);
    report.total += report.counts[kind];
    const rows = await queries[kind].orderBy('created_at').limit(limit).execute();
    report.events.push(...rows.map((row) => stuckEvent(kind, row)));
  }
  return report;
}

function stuckEvent(kind: StuckKind, row: EventRow): StuckEvent {
  return {
    kind,
    id: row.id,
    provider: row.provider,
    eventId: row.event_id,
    eventType: row.event_type,
    attempts: row.attempts,
    lastError: row.last_error,
    createdAt: row.created_at,
    dueAt: kind === 'expired_lease' ? row.lease_expires_at : kind === 'failed' ? row.next_attempt_at : null,
    leaseOwner: row.lease_owner,
  };
}

/** One line per kind found, e.g. "3 failed, 1 received and never processed (older than 30m)". */
export function summarizeStuck(report: StuckReport): string {
  if (report.total === 0) return 'no stuck events';
  const parts = (Object.keys(report.counts) as StuckKind[])
    .filter((kind) => report.counts[kind] > 0)
    .map((kind) => `${report.counts[kind]} ${STUCK_KIND_LABELS[kind]}${kind === 'old_received' ? ` for over ${formatDuration(report.olderThanMs)}` : ''}`);
  return `${report.total} stuck events: ${parts.join(', ')}`;
}
