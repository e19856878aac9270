import pLimit from 'p-limit';
import type { ReconcileSettings } from '../../config/settings.js';
import { OperationLock } from '../../db/operation-lock.js';
import { processOwner } from '../../db/lease.js';
import type { Inbox, ReceiveResult } from '../../inbox.js';
import type { ProviderName, VerifiedEvent } from '../../model/delivery.js';
import { PAYMENT_STATE_ORDER, type PaymentState } from '../../model/payment-event.js';
import { DEFAULT_API_CLIENT_OPTIONS, ProviderApiError, type ApiClientOptions } from '../../providers/api-client.js';
import { OperationError } from '../errors.js';
import { reconcileSources, type Candidate, type CandidatePage, type ReconcileSource, type ReconcileWindow } from './provider-sources.js';
import { ReconcileRuns, type ReconcileRun } from './runs.js';

/** The lock one reconciliation at a time holds, across every process of the installation. */
const LOCK_NAME = 'reconcile';
const LOCK_TTL_MS = 5 * 60_000;
/** Missing events listed in a report, at most (the counts are exact). */
const MAX_LISTED = 1000;

export interface ReconcileRequest {
  window: ReconcileWindow;
  /** Only this provider; all configured ones when absent. */
  provider?: ProviderName;
  /** List what is missing, record nothing, write nothing (no run, no lock). */
  dryRun?: boolean;
  /** PayU transactions an operator asks about. */
  payuTxnids?: string[];
  /** The key of the run (with `provider`): a run asked for once, as for a Stripe health event. */
  runKey?: string;
}

export interface MissingEvent {
  provider: ProviderName;
  eventId: string;
  eventType: string;
  paymentId: string | null;
  /** The state it reports, when it is about a payment. */
  state: PaymentState | null;
}

export interface ProviderReconcileReport {
  provider: ProviderName;
  /** Null for a dry run. */
  runKey: string | null;
  /** The run continued one that had not finished (from its cursor, over its window). */
  resumed: boolean;
  window: ReconcileWindow;
  status: 'finished' | 'failed' | 'dry-run';
  found: number;
  recorded: number;
  errors: number;
  lastError: string | null;
  missing: MissingEvent[];
}

export interface ReconcileReport {
  dryRun: boolean;
  runs: ProviderReconcileReport[];
  /** Providers not reconciled, and why (their API key is not set). */
  disabled: Array<{ provider: ProviderName; reason: string }>;
  /** Missing events found by every run together: anything above 0 means webhooks are being lost. */
  found: number;
}

export interface ReconcileDependencies {
  inbox: Inbox;
  settings: ReconcileSettings;
  /** How events are recorded: the inbox's own receive, as a delivery is (a test may wrap it). */
  receive?: (event: VerifiedEvent) => Promise<ReceiveResult>;
  apiClient?: Partial<ApiClientOptions>;
}

/**
 * Asks each configured provider's API what happened in the window, compares with what the inbox holds
 * (events and archived keys; for APIs that report states, the payment's state here), and records each
 * missing event through the inbox's receive, like a delivery: it is processed once, and a delivery of
 * it that comes later is a duplicate. One run at a time across processes (a lock in the database);
 * each provider's run is a row of `reconcile_runs` whose cursor advances page by page, so a run that
 * crashed is continued by the next from where it stopped.
 */
export async function reconcile(request: ReconcileRequest, deps: ReconcileDependencies): Promise<ReconcileReport> {
  const { inbox, settings } = deps;
  if (request.window.since.getTime() >= request.window.until.getTime()) throw new OperationError('--since must be before --until', 'bad_argument');
  const limit = pLimit(settings.concurrency);
  const context = {
    db: inbox.database,
    now: inbox.clock.now(),
    client: { ...DEFAULT_API_CLIENT_OPTIONS, ...deps.apiClient },
    limit,
    payuPendingOlderThanMs: settings.payuPendingOlderThanMs,
    payuTxnids: request.payuTxnids ?? [],
  };
  const chosen = (provider: ProviderName) => request.provider === undefined || request.provider === provider;
  const listed = reconcileSources(settings.apis, { ...context, window: request.window });
  const disabled = listed.disabled.filter((d) => chosen(d.provider));
  for (const { provider, reason } of disabled) inbox.logger.warn({ provider }, `${provider} is not reconciled: ${reason}`);
  if (request.provider !== undefined && disabled.length > 0) throw new OperationError(`cannot reconcile ${request.provider}: ${disabled[0]!.reason}`, 'bad_argument');

  const runner = new ProviderRunner(deps, limit, settings.maxPages);
  const runs: ProviderReconcileReport[] = [];
  if (request.dryRun) {
    for (const source of listed.sources.filter((s) => chosen(s.provider))) runs.push(await runner.dryRun(source, request.window));
    return { dryRun: true, runs, disabled, found: runs.reduce((sum, run) => sum + run.found, 0) };
  }

  const lock = new OperationLock({ db: inbox.database, clock: inbox.clock, name: LOCK_NAME, owner: processOwner(), ttlMs: LOCK_TTL_MS });
  const holder = await lock.take();
  if (holder) throw new OperationError(`another reconcile run holds the lock (${holder.owner}, until ${holder.expiresAt} UTC)`, 'reconcile_locked');
  try {
    const runsTable = new ReconcileRuns(inbox.database, inbox.clock);
    for (const provider of listed.sources.map((s) => s.provider).filter(chosen)) {
      // A run that did not finish is continued first, over its own window, from its cursor.
      const unfinished = await runsTable.unfinished(provider);
      if (unfinished) {
        const window = { since: unfinished.windowStart, until: unfinished.windowEnd };
        runs.push(await runner.run(sourceFor(provider, settings, context, window), await runsTable.recount(unfinished), runsTable, true));
      }
      const run = await runsTable.start(provider, request.window, request.runKey);
      runs.push(await runner.run(sourceFor(provider, settings, context, request.window), run, runsTable, false));
    }
  } finally {
    await lock.release();
  }
  return { dryRun: false, runs, disabled, found: runs.reduce((sum, run) => sum + run.found, 0) };
}

function sourceFor(provider: ProviderName, settings: ReconcileSettings, context: Omit<Parameters<typeof reconcileSources>[1], 'window'>, window: ReconcileWindow): ReconcileSource {
  return reconcileSources(settings.apis, { ...context, window }).sources.find((s) => s.provider === provider)!;
}

class ProviderRunner {
  private readonly receive: (event: VerifiedEvent) => Promise<ReceiveResult>;

  constructor(
    private readonly deps: ReconcileDependencies,
    private readonly limit: ReturnType<typeof pLimit>,
    private readonly maxPages: number,
  ) {
    this.receive = deps.receive ?? ((event) => deps.inbox.receive(event));
  }

  async dryRun(source: ReconcileSource, window: ReconcileWindow): Promise<ProviderReconcileReport> {
    const report = emptyReport(source.provider, null, false, window, 'dry-run');
    const listed = new Set<string>();
    let cursor: string | null = null;
    try {
      for (let pages = 0; ; pages++) {
        if (pages >= this.maxPages) throw new OperationError(`more than RECONCILE_MAX_PAGES (${this.maxPages}) pages; narrow the window`, 'reconcile_pages');
        const page = await this.page(source, cursor);
        // Nothing is recorded as it goes, so an event two pages report (a payment, then its refund) is one.
        const missing = (await this.missing(source.provider, page.candidates)).filter((event) => !listed.has(event.eventId));
        for (const event of missing) listed.add(event.eventId);
        report.found += missing.length;
        report.errors += page.problems.length;
        if (page.problems.length > 0) report.lastError = page.problems.at(-1)!;
        this.list(report, missing);
        if (page.next === null) break;
        cursor = page.next;
      }
    } catch (error) {
      report.status = 'failed';
      report.errors += 1;
      report.lastError = (error as Error).message;
    }
    return report;
  }

  /** One provider's run, page by page, committing counts and the cursor as it goes. */
  async run(source: ReconcileSource, run: ReconcileRun, runs: ReconcileRuns, resumed: boolean): Promise<ProviderReconcileReport> {
    const report = emptyReport(source.provider, run.runKey, resumed, { since: run.windowStart, until: run.windowEnd }, 'finished');
    let cursor = run.cursor;
    try {
      for (let pages = 0; ; pages++) {
        if (pages >= this.maxPages) throw new OperationError(`more than RECONCILE_MAX_PAGES (${this.maxPages}) pages; narrow the window`, 'reconcile_pages');
        const page = await this.page(source, cursor);
        const missing = await this.missing(source.provider, page.candidates);
        this.list(report, missing);
        // Every record of the page settles before a failure stops the run, so its counts are all in.
        const recorded = await Promise.allSettled(missing.map((event) => this.limit(() => this.record(event, run.runKey))));
        const failure = recorded.find((result) => result.status === 'rejected');
        if (failure) throw failure.reason;
        await runs.progress(run.runKey, {
          errors: page.problems.length,
          ...(page.problems.length > 0 ? { lastError: page.problems.at(-1)! } : {}),
          ...(page.next !== null ? { cursor: page.next } : {}),
        });
        if (page.next === null) break;
        cursor = page.next;
      }
      return fromRun(report, await runs.finish(run.runKey, 'finished'));
    } catch (error) {
      const message = (error as Error).message;
      this.deps.inbox.logger.error({ provider: source.provider, runKey: run.runKey }, `reconcile run stopped: ${message}`);
      const failed = fromRun(report, await runs.finish(run.runKey, 'failed', message));
      // Not an answer of the provider's: a fault here (the database, a crash) stops the whole run.
      if (!(error instanceof OperationError) && !(error instanceof ProviderApiError)) throw error;
      return failed;
    }
  }

  /**
   * One page of the provider's answer. Its items that could not be used (not asked for, outside the
   * window, not what a delivery could be) are counted as errors of the run, and logged here.
   */
  private async page(source: ReconcileSource, cursor: string | null): Promise<CandidatePage> {
    const page = await source.page(cursor);
    if (page.problems.length > 0) {
      this.deps.inbox.logger.warn({ provider: source.provider, problems: page.problems }, `reconcile: ${page.problems.length} item(s) of ${source.provider}'s answer not used`);
    }
    return page;
  }

  /** Records one missing event and counts it in the same step, so a crash loses neither. */
  private async record(event: VerifiedEvent, runKey: string): Promise<void> {
    const runs = new ReconcileRuns(this.deps.inbox.database, this.deps.inbox.clock);
    const result = await this.receive(event);
    // A delivery of it that arrived in between made it a duplicate: found, but not recorded by us.
    await runs.progress(runKey, { found: 1, recorded: result.outcome === 'recorded' ? 1 : 0 });
    this.deps.inbox.logger.info({ provider: event.provider, eventId: event.eventId, outcome: result.outcome }, 'reconcile recorded a missing event');
  }

  /**
   * The candidates the inbox does not hold: their key is neither stored nor archived and, for an API
   * that reports states, the payment is missing here or behind the state reported.
   */
  private async missing(provider: ProviderName, candidates: Candidate[]): Promise<VerifiedEvent[]> {
    if (candidates.length === 0) return [];
    const db = this.deps.inbox.database;
    const ids = [...new Set(candidates.map((c) => c.event.eventId))];
    const [stored, archived] = await Promise.all([
      db.selectFrom('webhook_events').select('event_id').where('provider', '=', provider).where('event_id', 'in', ids).execute(),
      db.selectFrom('archived_event_keys').select('event_id').where('provider', '=', provider).where('event_id', 'in', ids).execute(),
    ]);
    const known = new Set([...stored, ...archived].map((row) => row.event_id));
    const unknown = candidates.filter((c) => !known.has(c.event.eventId));
    const states = await this.statesHere(
      provider,
      unknown.filter((c) => c.byState).map((c) => this.paymentOf(c.event)?.paymentId ?? ''),
    );
    const seen = new Set<string>();
    return unknown
      .filter((candidate) => {
        if (seen.has(candidate.event.eventId)) return false;
        seen.add(candidate.event.eventId);
        if (!candidate.byState) return true;
        const payment = this.paymentOf(candidate.event);
        if (payment === null) return false;
        const here = states.get(payment.paymentId);
        return here === undefined || rank(here) < rank(payment.state);
      })
      .map((c) => c.event);
  }

  private list(report: ProviderReconcileReport, events: VerifiedEvent[]): void {
    for (const event of events.slice(0, Math.max(0, MAX_LISTED - report.missing.length))) {
      const payment = this.paymentOf(event);
      report.missing.push({ provider: event.provider, eventId: event.eventId, eventType: event.eventType, paymentId: payment?.paymentId ?? null, state: payment?.state ?? null });
    }
  }

  private paymentOf(event: VerifiedEvent): { paymentId: string; state: PaymentState } | null {
    const canonical = this.deps.inbox.providers.toCanonical(event.provider, { eventType: event.eventType, payload: event.parsedPayload });
    return canonical.kind === 'payment' ? canonical : null;
  }

  /** Each payment's furthest state here: its row, and the events held for it (processed or not yet). */
  private async statesHere(provider: ProviderName, paymentIds: string[]): Promise<Map<string, PaymentState>> {
    const ids = [...new Set(paymentIds.filter((id) => id !== ''))];
    const states = new Map<string, PaymentState>();
    if (ids.length === 0) return states;
    const db = this.deps.inbox.database;
    const further = (paymentId: string, state: PaymentState) => {
      const current = states.get(paymentId);
      if (current === undefined || rank(current) < rank(state)) states.set(paymentId, state);
    };
    const payments = await db.selectFrom('payments').select(['payment_id', 'status']).where('provider', '=', provider).where('payment_id', 'in', ids).execute();
    for (const row of payments) further(row.payment_id, row.status);
    const events = await db
      .selectFrom('webhook_events')
      .innerJoin('webhook_event_bodies', 'webhook_event_bodies.event_row_id', 'webhook_events.id')
      .select(['payment_id', 'event_type', 'payload'])
      .where('provider', '=', provider)
      .where('payment_id', 'in', ids)
      .execute();
    for (const row of events) {
      let payload: unknown;
      try {
        payload = JSON.parse(row.payload);
      } catch {
        continue; // An unreadable stored event changes no state; processing reports it.
      }
      const canonical = this.deps.inbox.providers.toCanonical(provider, { eventType: row.event_type, payload });
      if (canonical.kind === 'payment' && row.payment_id !== null) further(row.payment_id, canonical.state);
    }
    return states;
  }
}

const rank = (state: PaymentState) => PAYMENT_STATE_ORDER.indexOf(state);

function emptyReport(provider: ProviderName, runKey: string | null, resumed: boolean, window: ReconcileWindow, status: ProviderReconcileReport['status']): ProviderReconcileReport {
  return { provider, runKey, resumed, window, status, found: 0, recorded: 0, errors: 0, lastError: null, missing: [] };
}

function fromRun(report: ProviderReconcileReport, run: ReconcileRun): ProviderReconcileReport {
  return { ...report, status: run.status === 'failed' ? 'failed' : 'finished', found: run.found, recorded: run.recorded, errors: run.errors, lastError: run.lastError };
}
