import { sql, type Kysely, type Selectable, type SelectQueryBuilder } from 'kysely';
import type { Clock } from '../clock.js';
import { toDbTime, type InboxDatabase, type OutboxStatus, type WebhookEventsTable } from '../db/schema.js';
import { formatDuration } from '../config/duration.js';

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

/** `failed`: no automatic attempt left; `overdue`: still pending (or sending) long after it was written. */
export type StuckOutboxState = 'failed' | 'overdue';

/** A side effect (receipt, fulfilment request) that did not happen: a customer may have paid for nothing. */
export interface StuckOutboxRow {
  state: StuckOutboxState;
  id: number;
  kind: string;
  idempotencyKey: string;
  status: OutboxStatus;
  attempts: number;
  lastError: string | null;
  /** Written at. */
  createdAt: string;
  /** Next automatic attempt (null for a failed row: none left). */
  nextAttemptAt: string | null;
}

export interface StuckReport {
  checkedAt: string;
  olderThanMs: number;
  /** Outbox rows still pending after this long count as stuck; failed ones always do. */
  outboxOlderThanMs: number;
  /** How many of each kind exist (the lists are capped at `listLimit`). */
  counts: Record<StuckKind, number>;
  events: StuckEvent[];
  outboxCounts: Record<StuckOutboxState, number>;
  outbox: StuckOutboxRow[];
  /** Events and outbox rows. */
  total: number;
}

export const STUCK_KIND_LABELS: Record<StuckKind, string> = {
  expired_lease: 'processing with an expired lease',
  failed: 'failed',
  old_received: 'received and never processed',
};

export interface StuckThresholds {
  /** A `received` event older than this is stuck. */
  olderThanMs: number;
  /** A `pending` or `sending` outbox row written longer ago than this is stuck. */
  outboxOlderThanMs: number;
  /** Rows listed per kind, newest first. */
  listLimit?: number;
}

/**
 * What needs an operator, each kind one query on a status index. Events: `processing` whose lease
 * expired (a worker died and nobody took over), `failed` (with attempts and last error; retries may be
 * scheduled or exhausted), and `received` older than the threshold (no worker is picking events up).
 * Outbox rows: `failed` (no attempt left), and `pending`/`sending` past their own threshold (the
 * downstream has been failing for that long, or no dispatcher runs).
 */
export async function findStuck(db: Kysely<InboxDatabase>, clock: Clock, options: StuckThresholds): Promise<StuckReport> {
  const now = clock.now();
  const nowDb = toDbTime(now);
  const limit = options.listLimit ?? 50;
  const cutoff = (ms: number) => toDbTime(new Date(now.getTime() - ms));
  const events = () => db.selectFrom('webhook_events').selectAll();
  const eventQueries: Record<StuckKind, ReturnType<typeof events>> = {
    expired_lease: events().where('status', '=', 'processing').where('lease_expires_at', '<=', nowDb),
    failed: events().where('status', '=', 'failed'),
    old_received: events().where('status', '=', 'received').where('created_at', '<', cutoff(options.olderThanMs)),
  };
  const rows = () => db.selectFrom('outbox').selectAll();
  const outboxQueries: Record<StuckOutboxState, ReturnType<typeof rows>> = {
    failed: rows().where('status', '=', 'failed'),
    overdue: rows().where('status', 'in', ['pending', 'sending']).where('created_at', '<', cutoff(options.outboxOlderThanMs)),
  };
  const report: StuckReport = {
    checkedAt: now.toISOString(),
    olderThanMs: options.olderThanMs,
    outboxOlderThanMs: options.outboxOlderThanMs,
    counts: { expired_lease: 0, failed: 0, old_received: 0 },
    events: [],
    outboxCounts: { failed: 0, overdue: 0 },
    outbox: [],
    total: 0,
  };
  for (const kind of Object.keys(eventQueries) as StuckKind[]) {
    report.counts[kind] = await count(eventQueries[kind]);
    report.total += report.counts[kind];
    const found = await eventQueries[kind].orderBy('created_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    report.events.push(...found.map((row) => stuckEvent(kind, row)));
  }
  for (const state of Object.keys(outboxQueries) as StuckOutboxState[]) {
    report.outboxCounts[state] = await count(outboxQueries[state]);
    report.total += report.outboxCounts[state];
    const found = await outboxQueries[state].orderBy('id', 'desc').limit(limit).execute();
    report.outbox.push(
      ...found.map((row) => ({
        state,
        id: row.id,
        kind: row.kind,
        idempotencyKey: row.idempotency_key,
        status: row.status,
        attempts: row.attempts,
        lastError: row.last_error,
        createdAt: row.created_at,
        nextAttemptAt: row.next_attempt_at,
      })),
    );
  }
  return report;
}

async function count<TB extends keyof InboxDatabase, O>(query: SelectQueryBuilder<InboxDatabase, TB, O>): Promise<number> {
  const row = await query
    .clearSelect()
    .select(sql<number | string>`count(*)`.as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

function stuckEvent(kind: StuckKind, row: Selectable<WebhookEventsTable>): StuckEvent {
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

/**
 * One line: "3 stuck events: 1 failed, 2 received and never processed for over 30m; 1 stuck outbox
 * row: 1 failed".
 */
export function summarizeStuck(report: StuckReport): string {
  if (report.total === 0) return 'no stuck events or outbox rows';
  const part = (noun: string, counts: Array<[number, string]>) => {
    const found = counts.filter(([n]) => n > 0);
    const total = found.reduce((sum, [n]) => sum + n, 0);
    return total === 0 ? [] : [`${total} stuck ${noun}${total === 1 ? '' : 's'}: ${found.map(([n, label]) => `${n} ${label}`).join(', ')}`];
  };
  const eventKinds = (Object.keys(report.counts) as StuckKind[]).map((kind): [number, string] => [
    report.counts[kind],
    `${STUCK_KIND_LABELS[kind]}${kind === 'old_received' ? ` for over ${formatDuration(report.olderThanMs)}` : ''}`,
  ]);
  const outboxStates: Array<[number, string]> = [
    [report.outboxCounts.failed, 'failed'],
    [report.outboxCounts.overdue, `pending for over ${formatDuration(report.outboxOlderThanMs)}`],
  ];
  return [...part('event', eventKinds), ...part('outbox row', outboxStates)].join('; ');
}
