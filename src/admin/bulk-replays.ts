import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import { toDbTime, type BulkReplaysTable, type BulkReplayState, type InboxDatabase } from '../db/schema.js';
import { isoTime } from './event-list.js';

/** How often a running job's process says it is alive, besides after each event. */
export const BULK_HEARTBEAT_MS = 5_000;
/** A job still `running` whose heartbeat is older than this is shown `interrupted`: its process died. */
export const BULK_INTERRUPTED_AFTER_MS = 30_000;

export type BulkReplayCounts = Record<'processed' | 'failed' | 'skipped', number>;

/** A bulk replay as every serve process shows it. */
export interface BulkReplayJob {
  id: string;
  actor: string;
  reason: string;
  /** The filter it replays (status, provider, type, paymentId, from, to). */
  filter: Record<string, unknown>;
  total: number;
  done: number;
  counts: BulkReplayCounts;
  /** `interrupted`: stored as running, but its process stopped saying so (it died or was stopped). */
  state: BulkReplayState | 'interrupted';
  cancelRequested: boolean;
  error: string | null;
  /** The serve process that runs it. */
  runner: string;
  heartbeatAt: string;
  startedAt: string;
  finishedAt: string | null;
}

/**
 * The `bulk_replays` table: the progress, cancel request and heartbeat of each bulk replay, so any
 * serve process shows a job and can cancel it, whichever process runs it.
 */
export class BulkReplayJobs {
  constructor(
    private readonly db: Kysely<InboxDatabase>,
    private readonly clock: Clock,
  ) {}

  async create(job: { id: string; actor: string; reason: string; filter: object; total: number; runner: string }): Promise<void> {
    const now = toDbTime(this.clock.now());
    await this.db
      .insertInto('bulk_replays')
      .values({
        job_key: job.id,
        actor: job.actor,
        reason: job.reason,
        filter: JSON.stringify(job.filter),
        total: job.total,
        done: 0,
        processed: 0,
        failed: 0,
        skipped: 0,
        state: 'running',
        error: null,
        cancel_requested: 0,
        runner: job.runner,
        heartbeat_at: now,
        started_at: now,
        finished_at: null,
      })
      .execute();
  }

  /** Writes the runner's counts (and its heartbeat); true when an operator asked it to stop. */
  async progress(id: string, done: number, counts: BulkReplayCounts): Promise<boolean> {
    await this.db
      .updateTable('bulk_replays')
      .set({ done, ...counts, heartbeat_at: toDbTime(this.clock.now()) })
      .where('job_key', '=', id)
      .execute();
    const row = await this.db.selectFrom('bulk_replays').select('cancel_requested').where('job_key', '=', id).executeTakeFirst();
    return Number(row?.cancel_requested) === 1;
  }

  async heartbeat(id: string): Promise<void> {
    await this.db
      .updateTable('bulk_replays')
      .set({ heartbeat_at: toDbTime(this.clock.now()) })
      .where('job_key', '=', id)
      .where('state', '=', 'running')
      .execute();
  }

  async finish(id: string, state: Exclude<BulkReplayState, 'running'>, error: string | null): Promise<void> {
    await this.db
      .updateTable('bulk_replays')
      .set({ state, error, finished_at: toDbTime(this.clock.now()) })
      .where('job_key', '=', id)
      .execute();
  }

  async find(id: string): Promise<BulkReplayJob | null> {
    const row = await this.db.selectFrom('bulk_replays').selectAll().where('job_key', '=', id).executeTakeFirst();
    return row ? this.toJob(row) : null;
  }

  /**
   * Asks `job` (as just read) to stop after the event in hand; a job whose process died is marked
   * cancelled at once, since no runner is left to see the request. Returns the job as it now stands.
   */
  async requestCancel(job: BulkReplayJob): Promise<BulkReplayJob | null> {
    if (job.state === 'running') await this.db.updateTable('bulk_replays').set({ cancel_requested: 1 }).where('job_key', '=', job.id).execute();
    if (job.state === 'interrupted') {
      await this.db
        .updateTable('bulk_replays')
        .set({ cancel_requested: 1, state: 'cancelled', finished_at: toDbTime(this.clock.now()) })
        .where('job_key', '=', job.id)
        .where('state', '=', 'running')
        .execute();
    }
    return this.find(job.id);
  }

  /** The latest jobs first. */
  async recent(limit: number): Promise<BulkReplayJob[]> {
    const rows = await this.db.selectFrom('bulk_replays').selectAll().orderBy('started_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
    return rows.map((row) => this.toJob(row));
  }

  private toJob(row: Selectable<BulkReplaysTable>): BulkReplayJob {
    const stale = toDbTime(new Date(this.clock.now().getTime() - BULK_INTERRUPTED_AFTER_MS));
    return {
      id: row.job_key,
      actor: row.actor,
      reason: row.reason,
      filter: JSON.parse(row.filter) as Record<string, unknown>,
      total: Number(row.total),
      done: Number(row.done),
      counts: { processed: Number(row.processed), failed: Number(row.failed), skipped: Number(row.skipped) },
      state: row.state === 'running' && row.heartbeat_at < stale ? 'interrupted' : row.state,
      cancelRequested: Number(row.cancel_requested) === 1,
      error: row.error,
      runner: row.runner,
      heartbeatAt: isoTime(row.heartbeat_at),
      startedAt: isoTime(row.started_at),
      finishedAt: row.finished_at === null ? null : isoTime(row.finished_at),
    };
  }
}
