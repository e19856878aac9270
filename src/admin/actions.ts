import { randomUUID } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { toDbTime, type InboxDatabase } from '../db/schema.js';
import type { OutboxStore } from '../outbox/outbox-store.js';
import { Replayer, replayResultText, type ReplayItem } from '../ops/replay.js';
import type { Actor } from './access.js';
import type { AuditLog } from './audit.js';
import { AdminInputError } from './input.js';
import type { EventListFilter } from './event-list.js';

/** At most this many events per bulk replay: a larger one is split by narrowing the filter. */
export const BULK_REPLAY_MAX = 10_000;
/** Bulk jobs kept for their progress to be read after they end. */
const JOBS_KEPT = 20;

export interface BulkReplayJob {
  id: string;
  actor: string;
  reason: string;
  total: number;
  done: number;
  counts: Record<'processed' | 'failed' | 'skipped', number>;
  state: 'running' | 'finished' | 'cancelled' | 'error';
  error: string | null;
  startedAt: string;
  finishedAt: string | null;
}

/** What a bulk replay may select: failed or processed events (others are still being worked on). */
export type BulkFilter = Omit<EventListFilter, 'status' | 'limit' | 'after'> & { status: 'failed' | 'processed' };

export function reasonOf(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') throw new AdminInputError('reason', 'is required: say why (it is recorded with your name)');
  if (value.length > 1000) throw new AdminInputError('reason', 'must be at most 1000 characters');
  return value.trim();
}

/**
 * The changes an operator makes through /admin: replays (one, or many by filter, run here with
 * progress and cancel), outbox retries. Each goes through the same code as the CLI and is audited.
 */
export class AdminActions {
  private readonly jobs = new Map<string, BulkReplayJob & { cancelled: boolean }>();

  constructor(
    private readonly db: Kysely<InboxDatabase>,
    private readonly clock: Clock,
    private readonly replayer: Replayer,
    private readonly outbox: OutboxStore,
    private readonly audit: AuditLog,
    private readonly logger: Logger,
  ) {}

  /** A dry run writes nothing but shows the payment change; a real one is audited with its result. */
  async replay(actor: Actor, id: number, dryRun: boolean, reason: string | undefined): Promise<ReplayItem> {
    const report = await this.replayer.runOnce({ kind: 'rows', ids: [id] }, { dryRun, actor: actor.name, reason });
    const item = report.items[0]!;
    if (!dryRun) await this.audit.record(actor, 'replay', `event ${id}`, reason ?? null, replayResultText(item));
    return item;
  }

  async retryOutbox(actor: Actor, id: number, reason: string): Promise<number> {
    const reset = await this.outbox.retry({ id });
    await this.audit.record(actor, 'outbox_retry', `outbox ${id}`, reason, reset === 1 ? 'made due again' : 'not retryable (not failed or skipped)');
    return reset;
  }

  /** Events a bulk replay with this filter would replay, up to BULK_REPLAY_MAX + 1. */
  async bulkIds(filter: BulkFilter): Promise<number[]> {
    let query = this.db.selectFrom('webhook_events').select('id').where('status', '=', filter.status);
    if (filter.provider) query = query.where('provider', '=', filter.provider);
    if (filter.type) query = query.where('event_type', '=', filter.type);
    if (filter.paymentId) query = query.where('payment_id', '=', filter.paymentId);
    if (filter.from) query = query.where('created_at', '>=', toDbTime(filter.from));
    if (filter.to) query = query.where('created_at', '<', toDbTime(filter.to));
    const rows = await query
      .orderBy('id')
      .limit(BULK_REPLAY_MAX + 1)
      .execute();
    return rows.map((row) => row.id);
  }

  /**
   * Starts replaying what `filter` selects, oldest first, one event at a time. `expectedCount` is the
   * count the operator was shown: if the selection changed since, nothing starts.
   */
  async startBulkReplay(actor: Actor, filter: BulkFilter, reason: string, expectedCount: number): Promise<BulkReplayJob> {
    const ids = await this.bulkIds(filter);
    if (ids.length > BULK_REPLAY_MAX) throw new AdminInputError('filter', `selects more than ${BULK_REPLAY_MAX} events; narrow it`);
    if (ids.length !== expectedCount) throw new AdminInputError('expectedCount', `the filter now selects ${ids.length} events, not ${expectedCount}; count again`);
    const job = {
      id: randomUUID(),
      actor: actor.name,
      reason,
      total: ids.length,
      done: 0,
      counts: { processed: 0, failed: 0, skipped: 0 },
      state: 'running' as BulkReplayJob['state'],
      error: null as string | null,
      startedAt: this.clock.now().toISOString(),
      finishedAt: null as string | null,
      cancelled: false,
    };
    this.jobs.set(job.id, job);
    for (const old of [...this.jobs.keys()].slice(0, Math.max(0, this.jobs.size - JOBS_KEPT))) this.jobs.delete(old);
    await this.audit.record(actor, 'bulk_replay_started', `bulk ${job.id}`, reason, `${ids.length} events selected`);
    void this.runBulk(actor, job, ids, reason);
    return this.publicJob(job);
  }

  private async runBulk(actor: Actor, job: BulkReplayJob & { cancelled: boolean }, ids: number[], reason: string): Promise<void> {
    try {
      for (const id of ids) {
        if (job.cancelled) break;
        const report = await this.replayer.runOnce({ kind: 'rows', ids: [id] }, { dryRun: false, actor: actor.name, reason });
        for (const item of report.items) if (item.result !== 'would_replay') job.counts[item.result]++;
        job.done++;
      }
      job.state = job.cancelled ? 'cancelled' : 'finished';
    } catch (error) {
      job.state = 'error';
      job.error = (error as Error).message;
    }
    job.finishedAt = this.clock.now().toISOString();
    const { processed, failed, skipped } = job.counts;
    await this.audit
      .record(actor, `bulk_replay_${job.state}`, `bulk ${job.id}`, reason, `${job.done}/${job.total}: ${processed} processed, ${failed} failed, ${skipped} skipped`)
      .catch((error: unknown) => this.logger.error({ err: error, job: job.id }, 'bulk replay ended but its audit row was not written'));
  }

  job(id: string): BulkReplayJob | null {
    const job = this.jobs.get(id);
    return job ? this.publicJob(job) : null;
  }

  async cancel(actor: Actor, id: string): Promise<BulkReplayJob | null> {
    const job = this.jobs.get(id);
    if (!job) return null;
    if (job.state === 'running') {
      job.cancelled = true;
      await this.audit.record(actor, 'bulk_replay_cancel', `bulk ${id}`, null, `asked after ${job.done}/${job.total}`);
    }
    return this.publicJob(job);
  }

  private publicJob({ cancelled: _cancelled, ...job }: BulkReplayJob & { cancelled: boolean }): BulkReplayJob {
    return { ...job, counts: { ...job.counts } };
  }
}
