import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { InboxDatabase } from '../db/schema.js';
import { eventsMatching, type EventFilter } from '../store/event-filter.js';
import type { OutboxStore } from '../outbox/outbox-store.js';
import { Replayer, replayResultText, type ReplayItem } from '../ops/replay.js';
import type { Actor } from './access.js';
import type { AuditLog } from './audit.js';
import { BULK_HEARTBEAT_MS, BulkReplayJobs, type BulkReplayJob } from './bulk-replays.js';
import { AdminInputError } from './input.js';

/** At most this many events per bulk replay: a larger one is split by narrowing the filter. */
export const BULK_REPLAY_MAX = 10_000;

/** What a bulk replay may select: failed or processed events (others are still being worked on). */
export type BulkFilter = Omit<EventFilter, 'status' | 'eventId' | 'q'> & { status: 'failed' | 'processed' };

export function reasonOf(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new AdminInputError('reason', 'is required: say why (it is recorded with your name)');
  if (value.length > 1000) throw new AdminInputError('reason', 'must be at most 1000 characters');
  return value.trim();
}

/** What AdminActions works with (AdminDashboard builds it from the inbox it shows). */
export interface AdminActionsOptions {
  /** Where the bulk replays' progress is kept, for every process to show. */
  db: Kysely<InboxDatabase>;
  clock: Clock;
  /** Replays through the same code as the CLI's `replay`. */
  replayer: Replayer;
  /** The outbox whose failed or skipped messages a retry makes due again. */
  outbox: OutboxStore;
  /** Where each action is recorded with its actor, reason and result. */
  audit: AuditLog;
  logger: Logger;
  /** This process, as bulk_replays.runner shows it. */
  runner: string;
}

/**
 * The changes an operator makes through /admin: replays (one, or many by filter, run by the process
 * that was asked, with progress and cancel in the database for every process), outbox retries. Each
 * goes through the same code as the CLI and is audited.
 */
export class AdminActions {
  readonly bulkJobs: BulkReplayJobs;
  /** The bulk replays this process runs, so a shutdown can stop them. */
  private readonly running = new Map<string, { stop: boolean; ended: Promise<void> }>();
  private readonly db: Kysely<InboxDatabase>;
  private readonly replayer: Replayer;
  private readonly outbox: OutboxStore;
  private readonly audit: AuditLog;
  private readonly logger: Logger;
  private readonly runner: string;

  constructor(options: AdminActionsOptions) {
    ({ db: this.db, replayer: this.replayer, outbox: this.outbox, audit: this.audit, logger: this.logger, runner: this.runner } = options);
    this.bulkJobs = new BulkReplayJobs(options.db, options.clock);
  }

  /** A dry run writes nothing but shows the payment change; a real one is audited with its result. */
  async replay(actor: Actor, id: number, dryRun: boolean, reason: string | undefined): Promise<ReplayItem> {
    const report = await this.replayer.runOnce({ kind: 'rows', ids: [id] }, { dryRun, actor: actor.name, reason });
    const item = report.items[0]!;
    if (!dryRun) await this.audit.record(actor, { action: 'replay', target: `event ${id}`, reason: reason ?? null, result: replayResultText(item) });
    return item;
  }

  async retryOutbox(actor: Actor, id: number, reason: string): Promise<number> {
    const reset = await this.outbox.retry({ id });
    await this.audit.record(actor, {
      action: 'outbox_retry',
      target: `outbox ${id}`,
      reason,
      result: reset === 1 ? 'made due again' : 'not retryable (not failed or skipped)',
    });
    return reset;
  }

  /** Events a bulk replay with this filter would replay, up to BULK_REPLAY_MAX + 1. */
  async bulkIds(filter: BulkFilter): Promise<number[]> {
    const query = this.db.selectFrom('webhook_events').select('id').where(eventsMatching(filter));
    const rows = await query
      .orderBy('id')
      .limit(BULK_REPLAY_MAX + 1)
      .execute();
    return rows.map((row) => row.id);
  }

  /**
   * Starts replaying what `filter` selects, oldest first, one event at a time, in this process.
   * `expectedCount` is the count the operator was shown: if the selection changed since, nothing starts.
   */
  async startBulkReplay(actor: Actor, filter: BulkFilter, reason: string, expectedCount: number): Promise<BulkReplayJob> {
    const ids = await this.bulkIds(filter);
    if (ids.length > BULK_REPLAY_MAX) throw new AdminInputError('filter', `selects more than ${BULK_REPLAY_MAX} events; narrow it`);
    if (ids.length !== expectedCount) throw new AdminInputError('expectedCount', `the filter now selects ${ids.length} events, not ${expectedCount}; count again`);
    const id = randomUUID();
    await this.bulkJobs.create({ id, actor: actor.name, reason, filter, total: ids.length, runner: this.runner });
    await this.audit.record(actor, { action: 'bulk_replay_started', target: `bulk ${id}`, reason, result: `${ids.length} events selected` });
    const control = { stop: false, ended: Promise.resolve() };
    control.ended = this.runBulk(actor, id, ids, reason, control).finally(() => this.running.delete(id));
    this.running.set(id, control);
    return (await this.bulkJobs.find(id))!;
  }

  private async runBulk(actor: Actor, id: string, ids: number[], reason: string, control: { stop: boolean }): Promise<void> {
    const counts = { processed: 0, failed: 0, skipped: 0 };
    let done = 0;
    let state: 'finished' | 'cancelled' | 'error' = 'finished';
    let error: string | null = null;
    // Besides the write after each event: one event's replay may outlast the interrupted threshold.
    const heartbeat = setInterval(() => {
      this.bulkJobs.heartbeat(id).catch((failure: unknown) => this.logger.warn({ err: failure, job: id }, 'bulk replay heartbeat not written'));
    }, BULK_HEARTBEAT_MS);
    try {
      for (const eventId of ids) {
        if (control.stop) {
          state = 'error';
          error = 'stopped: the serve process running it shut down';
          break;
        }
        const report = await this.replayer.runOnce({ kind: 'rows', ids: [eventId] }, { dryRun: false, actor: actor.name, reason });
        for (const item of report.items) if (item.result !== 'would_replay') counts[item.result]++;
        done++;
        if (await this.bulkJobs.progress(id, done, counts)) {
          state = 'cancelled';
          break;
        }
      }
    } catch (failure) {
      state = 'error';
      error = (failure as Error).message;
    } finally {
      clearInterval(heartbeat);
    }
    const { processed, failed, skipped } = counts;
    try {
      await this.bulkJobs.finish(id, state, error);
      await this.audit.record(actor, {
        action: `bulk_replay_${state}`,
        target: `bulk ${id}`,
        reason,
        result: `${done}/${ids.length}: ${processed} processed, ${failed} failed, ${skipped} skipped`,
      });
    } catch (failure) {
      this.logger.error({ err: failure, job: id }, 'bulk replay ended but its end or audit row was not written');
    }
  }

  job(id: string): Promise<BulkReplayJob | null> {
    return this.bulkJobs.find(id);
  }

  /** Asks the job to stop, whichever process runs it; audited when it was running. */
  async cancel(actor: Actor, id: string): Promise<BulkReplayJob | null> {
    const before = await this.bulkJobs.find(id);
    if (!before) return null;
    if (before.state !== 'running' && before.state !== 'interrupted') return before;
    const job = await this.bulkJobs.requestCancel(before);
    await this.audit.record(actor, {
      action: 'bulk_replay_cancel',
      target: `bulk ${id}`,
      reason: null,
      result: `asked after ${before.done}/${before.total}${before.state === 'interrupted' ? ' (its process had stopped)' : ''}`,
    });
    return job;
  }

  /** Shutdown: this process's bulk replays stop after the event in hand and say why. */
  async stop(): Promise<void> {
    const running = [...this.running.values()];
    for (const control of running) control.stop = true;
    await Promise.all(running.map((control) => control.ended));
  }
}
