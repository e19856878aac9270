import { randomUUID } from 'node:crypto';
import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../../clock.js';
import { olderThan, type KeysetPosition } from '../../db/keyset.js';
import { fromDbTime, toDbTime, type InboxDatabase, type ReconcileRunsTable, type ReconcileRunStatus } from '../../db/schema.js';

export interface ReconcileRun {
  id: number;
  runKey: string;
  provider: string;
  windowStart: Date;
  windowEnd: Date;
  status: ReconcileRunStatus;
  found: number;
  recorded: number;
  errors: number;
  cursor: string | null;
  lastError: string | null;
  startedAt: Date;
  finishedAt: Date | null;
}

/** What one page of a run adds: counts, and where the next page starts. */
export interface RunProgress {
  found?: number;
  recorded?: number;
  errors?: number;
  lastError?: string;
  cursor?: string;
}

/** The `reconcile_runs` table: every run, its window and counts, and the cursor a crashed run resumes from. */
export class ReconcileRuns {
  constructor(
    private readonly db: Kysely<InboxDatabase>,
    private readonly clock: Clock,
  ) {}

  /**
   * A new run; its row is found by its key, never by an insert id (which not every store returns). The
   * key is random unless given: a given one (a Stripe health event's) makes the run happen once.
   */
  async start(provider: string, window: { since: Date; until: Date }, runKey: string = randomUUID()): Promise<ReconcileRun> {
    await this.db
      .insertInto('reconcile_runs')
      .values({
        run_key: runKey,
        provider,
        window_start: toDbTime(window.since),
        window_end: toDbTime(window.until),
        dry_run: 0,
        status: 'running',
        found: 0,
        recorded: 0,
        errors: 0,
        cursor: null,
        last_error: null,
        started_at: toDbTime(this.clock.now()),
        finished_at: null,
      })
      .execute();
    return (await this.byKey(runKey))!;
  }

  /**
   * The provider's run that did not finish (it crashed, or stopped on an error): the next run
   * continues it from its cursor. Only the holder of the reconcile lock asks, so it is not running.
   */
  async unfinished(provider: string): Promise<ReconcileRun | null> {
    const row = await this.db
      .selectFrom('reconcile_runs')
      .selectAll()
      .where('provider', '=', provider)
      .where('status', 'in', ['running', 'failed'])
      .orderBy('started_at', 'desc')
      .orderBy('id', 'desc')
      .limit(1)
      .executeTakeFirst();
    return row ? toRun(row) : null;
  }

  /**
   * An unfinished run's counts made good from what it left in the database before it resumes: an
   * event recorded just before a crash, whose count was not yet written, is counted. Only the holder
   * of the reconcile lock runs a provider's reconciliation, and each starts by resuming this run, so
   * the events reconciled for the provider since the run started are all its own.
   */
  async recount(run: ReconcileRun): Promise<ReconcileRun> {
    const row = await this.db
      .selectFrom('webhook_events')
      .select((eb) => eb.fn.countAll<number | string>().as('events'))
      .where('provider', '=', run.provider)
      .where('source', '=', 'reconcile')
      .where('created_at', '>=', toDbTime(run.startedAt))
      .executeTakeFirstOrThrow();
    const uncounted = Number(row.events) - run.recorded;
    if (uncounted <= 0) return run;
    await this.progress(run.runKey, { found: uncounted, recorded: uncounted });
    return (await this.byKey(run.runKey))!;
  }

  async progress(runKey: string, progress: RunProgress): Promise<void> {
    await this.db
      .updateTable('reconcile_runs')
      .set((eb) => ({
        found: eb('found', '+', progress.found ?? 0),
        recorded: eb('recorded', '+', progress.recorded ?? 0),
        errors: eb('errors', '+', progress.errors ?? 0),
        ...(progress.lastError !== undefined ? { last_error: progress.lastError } : {}),
        ...(progress.cursor !== undefined ? { cursor: progress.cursor } : {}),
      }))
      .where('run_key', '=', runKey)
      .execute();
  }

  async finish(runKey: string, status: Exclude<ReconcileRunStatus, 'running'>, lastError?: string): Promise<ReconcileRun> {
    await this.db
      .updateTable('reconcile_runs')
      .set({ status, finished_at: toDbTime(this.clock.now()), ...(lastError !== undefined ? { last_error: lastError } : {}) })
      .where('run_key', '=', runKey)
      .execute();
    return (await this.byKey(runKey))!;
  }

  async byKey(runKey: string): Promise<ReconcileRun | null> {
    const row = await this.db.selectFrom('reconcile_runs').selectAll().where('run_key', '=', runKey).executeTakeFirst();
    return row ? toRun(row) : null;
  }

  /**
   * The latest runs first, of one provider or all: `webhook-inbox reconcile --history` and the
   * dashboard's pages of runs, each page starting after the run `after` (where the last one ended).
   */
  async history(limit: number, provider?: string, after?: KeysetPosition): Promise<ReconcileRun[]> {
    let query = this.db.selectFrom('reconcile_runs').selectAll().orderBy('started_at', 'desc').orderBy('id', 'desc').limit(limit);
    if (provider) query = query.where('provider', '=', provider);
    if (after) query = query.where(olderThan('started_at', after));
    return (await query.execute()).map(toRun);
  }
}

function toRun(row: Selectable<ReconcileRunsTable>): ReconcileRun {
  return {
    id: Number(row.id),
    runKey: row.run_key,
    provider: row.provider,
    windowStart: fromDbTime(row.window_start),
    windowEnd: fromDbTime(row.window_end),
    status: row.status,
    found: Number(row.found),
    recorded: Number(row.recorded),
    errors: Number(row.errors),
    cursor: row.cursor,
    lastError: row.last_error,
    startedAt: fromDbTime(row.started_at),
    finishedAt: row.finished_at === null ? null : fromDbTime(row.finished_at),
  };
}
