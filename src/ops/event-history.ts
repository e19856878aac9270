import type { Kysely, Selectable } from 'kysely';
import { fromDbTime, type DbTime, type EventReplaysTable, type InboxDatabase, type WebhookEventsTable } from '../db/schema.js';
import { shownOutcome, type ShownOutcome } from '../model/outcome.js';

/** One processing of an event: the first, and one more each time a replay made it due again. */
export interface Processing extends ShownOutcome {
  outcome: string;
  processedAt: Date;
  /** When its attempt was claimed; null when not known (an event restored from an archive). */
  startedAt: Date | null;
  /** Its attempt's number: attempts count from 1 again after a replay. */
  attempt: number;
  /** The worker (lease owner) that processed it, when known. */
  worker: string | null;
  /** The replay that made the event due for it: null for the first, or when no replay is known to have. */
  replay: { actor: string; reason: string; requestedAt: Date } | null;
}

export type ReplayRow = Selectable<EventReplaysTable>;

/** The event's replays, in the order they were asked. */
export function replaysOf(db: Kysely<InboxDatabase>, eventRowId: number): Promise<ReplayRow[]> {
  return db.selectFrom('event_replays').selectAll().where('event_row_id', '=', eventRowId).orderBy('id').execute();
}

const time = (value: DbTime | null) => (value === null ? null : fromDbTime(value));

/**
 * Every processing of the event, oldest first: those its replays replaced (each replay that made the
 * event due again keeps the one the row held, see replay.ts), then the one its row holds while it is
 * processed. Each is credited to the last replay that made the event due before it.
 */
export function processingsOf(
  event: Pick<Selectable<WebhookEventsTable>, 'status' | 'outcome' | 'outcome_detail' | 'processed_at' | 'claimed_at' | 'attempts' | 'lease_owner'>,
  replays: ReplayRow[],
): Processing[] {
  const processings: Processing[] = [];
  let cause: ReplayRow | null = null;
  const add = (outcome: string, detail: string | null, processedAt: DbTime, startedAt: DbTime | null, attempt: number, worker: string | null) => {
    processings.push({
      ...shownOutcome(outcome, detail),
      processedAt: fromDbTime(processedAt),
      startedAt: time(startedAt),
      attempt,
      worker,
      replay: cause && { actor: cause.actor, reason: cause.reason, requestedAt: fromDbTime(cause.requested_at) },
    });
  };
  for (const replay of replays) {
    if (replay.made_due_at === null) continue;
    if (replay.previous_outcome !== null && replay.previous_processed_at !== null) {
      add(replay.previous_outcome, replay.previous_outcome_detail, replay.previous_processed_at, replay.previous_claimed_at, replay.previous_attempts, replay.previous_owner);
    }
    cause = replay;
  }
  if (event.status === 'processed' && event.outcome !== null && event.processed_at !== null) {
    add(event.outcome, event.outcome_detail, event.processed_at, event.claimed_at, event.attempts, event.lease_owner);
  }
  return processings;
}
