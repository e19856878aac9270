import type { Kysely, Selectable } from 'kysely';
import { fromDbTime, toDbTime, type InboxDatabase, type WebhookEventsTable } from '../db/schema.js';
import { shownOutcome } from '../model/outcome.js';
import type { EventState, PipelineStats } from './inbox-store.js';

/** Reading events: by id or key, what is due, and the counts monitoring asks for. */

export function toEventState(row: Selectable<WebhookEventsTable>): EventState {
  return {
    id: row.id,
    provider: row.provider,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    leaseOwner: row.lease_owner,
    nextAttemptAt: row.next_attempt_at ? fromDbTime(row.next_attempt_at) : null,
    lastError: row.last_error,
    ...shownOutcome(row.outcome, row.outcome_detail),
    createdAt: fromDbTime(row.created_at),
    processedAt: row.processed_at ? fromDbTime(row.processed_at) : null,
  };
}

export async function eventById(db: Kysely<InboxDatabase>, id: number): Promise<EventState | null> {
  const row = await db.selectFrom('webhook_events').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toEventState(row) : null;
}

export async function eventByKey(db: Kysely<InboxDatabase>, provider: string, eventId: string): Promise<EventState | null> {
  const row = await db.selectFrom('webhook_events').selectAll().where('provider', '=', provider).where('event_id', '=', eventId).executeTakeFirst();
  return row ? toEventState(row) : null;
}

/** Ids of events due at `dueBy`, oldest due first. */
export async function dueEventIds(db: Kysely<InboxDatabase>, dueBy: Date, limit: number): Promise<number[]> {
  const rows = await db.selectFrom('webhook_events').select('id').where('next_attempt_at', '<=', toDbTime(dueBy)).orderBy('next_attempt_at').limit(limit).execute();
  return rows.map((r) => r.id);
}

export async function pipelineStats(db: Kysely<InboxDatabase>, now: Date): Promise<PipelineStats> {
  const nowDb = toDbTime(now);
  // Pending events are exactly those with a next attempt time: the index bounds the scan to them.
  const pending = db
    .selectFrom('webhook_events')
    .select((eb) => [
      eb.fn.sum<number | string | null>(eb.case().when('next_attempt_at', '<=', nowDb).then(1).else(0).end()).as('due'),
      eb.fn
        .sum<number | string | null>(
          eb
            .case()
            .when(eb.and([eb('status', '=', 'processing'), eb('lease_expires_at', '<=', nowDb)]))
            .then(1)
            .else(0)
            .end(),
        )
        .as('stuck'),
      eb.fn.min('created_at').as('oldest'),
    ])
    .where('next_attempt_at', 'is not', null)
    .executeTakeFirstOrThrow();
  const failed = db
    .selectFrom('webhook_events')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('status', '=', 'failed')
    .where('next_attempt_at', 'is', null)
    .executeTakeFirstOrThrow();
  const [counts, givenUp] = await Promise.all([pending, failed]);
  return {
    due: Number(counts.due ?? 0),
    stuck: Number(counts.stuck ?? 0),
    oldestPendingAt: counts.oldest ? fromDbTime(counts.oldest) : null,
    failed: Number(givenUp.n),
  };
}
