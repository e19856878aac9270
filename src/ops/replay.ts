import { insertReturningId } from '../db/insert-id.js';
import { toDbTime } from '../db/schema.js';
import type { EventOutcome } from '../model/outcome.js';
import type { Inbox } from '../inbox.js';
import { OperationError } from './errors.js';
import { selectEventRows, type EventRow } from '../db/event-rows.js';
import { findEvents, resolveEvent, type EventSelection } from './event-lookup.js';
import { describeTransition } from './payment-transition.js';

/** Named events, events by row id, or every event matching a filter (a status is required there). */
export type ReplaySelection =
  { kind: 'events'; refs: string[]; provider?: string } | { kind: 'rows'; ids: number[] } | { kind: 'filter'; filter: EventSelection & { status: 'failed' | 'processed' } };

export interface ReplayOptions {
  dryRun: boolean;
  /** Who asked (OS user or --actor) and why; recorded with every replay. */
  actor: string;
  reason?: string;
  onProgress?: (done: number, total: number) => void;
}

export interface ReplayItem {
  id: number;
  provider: string;
  eventId: string;
  eventType: string;
  previousStatus: string;
  /** The payment change processing would cause now (computed for dry runs). */
  transition?: string;
  result: 'processed' | 'failed' | 'skipped' | 'would_replay';
  /** The outcome when processed, the error when failed, the reason when skipped. */
  detail?: string;
  /** The outcome structured, when processed. */
  outcomeDetail?: EventOutcome;
}

export interface ReplayReport {
  dryRun: boolean;
  items: ReplayItem[];
  /** More events matched than --limit allowed. */
  more: boolean;
  counts: Record<'processed' | 'failed' | 'skipped', number>;
}

/** What a replay works with: an inbox's database (its events read, each replay kept), store, providers, processor and clock. */
export type ReplayDependencies = Pick<Inbox, 'database' | 'store' | 'providers' | 'processor' | 'clock'>;

/**
 * Replays stored events through the same claim and fenced-complete path as live traffic. An event is
 * made due again by a compare-and-set on the state the operator saw, so two replays running at once
 * (or a replay and a live retry) cannot both process it: one wins the update or the claim, the other
 * reports "skipped".
 */
export class Replayer {
  constructor(private readonly deps: ReplayDependencies) {}

  async runOnce(selection: ReplaySelection, options: ReplayOptions): Promise<ReplayReport> {
    if (!options.dryRun && !options.reason?.trim()) throw new OperationError('a replay needs --reason (it is recorded with who and when)', 'bad_argument');
    const { events, more } = await this.select(selection);
    const report: ReplayReport = { dryRun: options.dryRun, items: [], more, counts: { processed: 0, failed: 0, skipped: 0 } };
    for (const [index, event] of events.entries()) {
      const item = options.dryRun ? await this.preview(event) : await this.replay(event, options.actor, options.reason!.trim());
      report.items.push(item);
      if (item.result !== 'would_replay') report.counts[item.result]++;
      options.onProgress?.(index + 1, events.length);
    }
    return report;
  }

  private async select(selection: ReplaySelection): Promise<{ events: EventRow[]; more: boolean }> {
    // As the provider sent them: a payment's events replay in the order they came.
    if (selection.kind === 'filter') return findEvents(this.deps.database, selection.filter, 'oldest');
    if (selection.kind === 'rows') {
      const rows = selection.ids.length === 0 ? [] : await selectEventRows(this.deps.database).where('id', 'in', selection.ids).orderBy('id').execute();
      const missing = selection.ids.find((id) => !rows.some((row) => row.id === id));
      if (missing !== undefined) throw new OperationError(`no event with id ${missing}`, 'event_not_found');
      return { events: rows, more: false };
    }
    const events: EventRow[] = [];
    for (const ref of new Set(selection.refs)) events.push(await resolveEvent(this.deps.database, ref, selection.provider));
    return { events, more: false };
  }

  private async preview(event: EventRow): Promise<ReplayItem> {
    const blocked = this.leaseHolder(event);
    const transition = await describeTransition(this.deps.database, this.deps.providers, event);
    return blocked ? { ...itemOf(event), transition, result: 'skipped', detail: blocked } : { ...itemOf(event), transition, result: 'would_replay' };
  }

  private async replay(event: EventRow, actor: string, reason: string): Promise<ReplayItem> {
    const { database: db, clock } = this.deps;
    const logged = await insertReturningId(
      db,
      db.insertInto('event_replays').values({
        event_row_id: event.id,
        provider: event.provider,
        event_id: event.event_id,
        actor,
        reason,
        previous_status: event.status,
        previous_attempts: event.attempts,
        previous_error: event.last_error,
        ...heldProcessing(event),
        requested_at: toDbTime(clock.now()),
      }),
    );
    const item = await this.makeDueAndProcess(event, logged);
    await db
      .updateTable('event_replays')
      .set({ result: replayResultText(item), finished_at: toDbTime(clock.now()) })
      .where('id', '=', logged)
      .execute();
    return item;
  }

  /** `replayId`: the event_replays row of this replay, which keeps the processing a reset replaces. */
  private async makeDueAndProcess(event: EventRow, replayId: number): Promise<ReplayItem> {
    const blocked = this.leaseHolder(event);
    if (blocked) return { ...itemOf(event), result: 'skipped', detail: blocked };
    if (event.status === 'failed' || event.status === 'processed') {
      // Compare-and-set on what was read: a concurrent replay, retry or completion changes the row,
      // and then this replay stands down instead of processing the event a second time.
      const due = await this.deps.store.makeDueForReplay(event, replayId);
      if (!due) return { ...itemOf(event), result: 'skipped', detail: 'changed since it was selected (replayed or processed concurrently)' };
    }
    // The live pipeline's path: claim, fenced complete, failure bookkeeping.
    const processed = await this.deps.processor.process(event.id);
    switch (processed.result) {
      case 'processed':
        return { ...itemOf(event), result: 'processed', detail: processed.outcome, outcomeDetail: processed.outcomeDetail };
      case 'failed':
        return { ...itemOf(event), result: 'failed', detail: processed.error };
      case 'not_claimed':
        return { ...itemOf(event), result: 'skipped', detail: 'claimed by another worker' };
      case 'lease_lost':
        return { ...itemOf(event), result: 'skipped', detail: 'lease lost to another worker' };
    }
  }

  private leaseHolder(event: EventRow): string | null {
    if (event.status !== 'processing' || event.lease_expires_at === null) return null;
    if (event.lease_expires_at <= toDbTime(this.deps.clock.now())) return null;
    return `leased by ${event.lease_owner ?? 'a worker'} until ${event.lease_expires_at} UTC`;
  }
}

/** "processed: applied: payment pi_1 captured", "skipped: claimed by another worker", ... */
export function replayResultText(item: ReplayItem): string {
  const result = item.result.replace('_', ' ');
  return item.detail ? `${result}: ${item.detail}` : result;
}

/**
 * The processing the event's row holds, as a replay's row keeps it: a reset replaces it (see
 * processingsOf). Only a processed event holds one; a failed row's outcome is an earlier processing's,
 * kept by the replay that replaced that one.
 */
function heldProcessing(event: EventRow) {
  const processed = event.status === 'processed';
  return {
    previous_outcome: processed ? event.outcome : null,
    previous_outcome_detail: processed ? event.outcome_detail : null,
    previous_processed_at: processed ? event.processed_at : null,
    previous_claimed_at: processed ? event.claimed_at : null,
    previous_owner: processed ? event.lease_owner : null,
  };
}

function itemOf(event: EventRow): Omit<ReplayItem, 'result'> {
  return { id: event.id, provider: event.provider, eventId: event.event_id, eventType: event.event_type, previousStatus: event.status };
}
