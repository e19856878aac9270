import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { appliedOutcome, type EventApplier } from '../domain/applier.js';
import { describeError, LeaseLostError } from '../errors.js';
import type { AttemptResult, InboxMetrics } from '../observability/metrics.js';
import type { PaymentState } from '../model/payment-event.js';
import { outcomeText, type EventOutcome } from '../model/outcome.js';
import type { InboxEvent, InboxStore, Lease } from '../store/inbox-store.js';
import { retryAt, type RetryPolicy } from './retry-policy.js';

export type ProcessResult =
  | { result: 'processed'; outcome: string; outcomeDetail: EventOutcome; staleState?: PaymentState }
  | { result: 'not_claimed' }
  | { result: 'failed'; error: string; retryAt: Date | null }
  | { result: 'lease_lost' };

/** What a claimed attempt can end with. */
type AttemptOutcome = Exclude<ProcessResult, { result: 'not_claimed' }>;

export interface ProcessorOptions {
  store: InboxStore;
  apply: EventApplier;
  /** Identifies this worker in lease_owner (host:pid:...). */
  owner: string;
  leaseMs: number;
  retry: RetryPolicy;
  clock: Clock;
  logger: Logger;
  metrics: InboxMetrics;
}

/**
 * Processes one event exactly once: claim the lease, run the business transaction fenced by it,
 * record a failure with its retry time. Safe to call for any id, any number of times, from any
 * number of workers: only the lease holder does anything.
 */
export class Processor {
  /** Leases held right now, with what stops their handlers, so a shutdown can hand them back. */
  private readonly inFlight = new Map<number, { lease: Lease; interrupt: AbortController }>();
  /** Who waits for an attempt on an event to end in this process, by event id. */
  private readonly attemptWaiters = new Map<number, Set<() => void>>();

  constructor(private readonly options: ProcessorOptions) {}

  async process(id: number): Promise<ProcessResult> {
    const { store, owner, leaseMs, logger, clock, metrics } = this.options;
    const claimed = await store.claim(id, owner, leaseMs);
    if (!claimed) return { result: 'not_claimed' };
    const { lease, event } = claimed;
    const log = logger.child({ provider: event.provider, eventId: event.eventId, eventType: event.eventType, attempt: lease.attempts });
    if (claimed.takeover) {
      metrics.leaseTakenOver(event.provider);
      log.warn('took over an event whose lease had expired');
    }

    const started = clock.now().getTime();
    // Retrying cannot make a stored row readable.
    const attempt = claimed.unreadable === undefined ? await this.attempt(lease, event, log) : await this.recordFailure(lease, claimed.unreadable, null, log);
    const processingMs = clock.now().getTime() - started;
    const result: AttemptResult = attempt.result === 'failed' && attempt.retryAt ? 'retry_scheduled' : attempt.result;
    metrics.attemptFinished({ provider: event.provider, result, attempt: lease.attempts, seconds: processingMs / 1000 });
    switch (attempt.result) {
      case 'processed': {
        const latencyMs = clock.now().getTime() - event.createdAt.getTime();
        metrics.eventProcessed({ provider: event.provider, staleState: attempt.staleState, latencySeconds: latencyMs / 1000 });
        log.info({ status: 'processed', outcome: attempt.outcome, outcomeDetail: attempt.outcomeDetail, processingMs, latencyMs }, 'event processed');
        break;
      }
      case 'lease_lost':
        log.warn({ processingMs }, 'lease lost before commit; changes rolled back');
        break;
      case 'failed':
        log.warn(
          { status: 'failed', error: attempt.error, retryAt: attempt.retryAt?.toISOString() ?? null, processingMs },
          attempt.retryAt ? 'event processing failed; will retry' : 'event processing failed; no automatic retry left',
        );
    }
    for (const wake of [...(this.attemptWaiters.get(id) ?? [])]) wake();
    return attempt;
  }

  /** Whether an attempt on event `id` is running in this process right now. */
  isAttempting(id: number): boolean {
    return this.inFlight.has(id);
  }

  /**
   * Resolves when an attempt on event `id` ends in this process (its outcome is then in the store), or
   * after `timeoutMs`, whichever comes first. Lets a caller whose claim was refused (inline mode) look
   * at the event once it may have changed, instead of reading it over and over.
   */
  attemptEnded(id: number, timeoutMs: number): Promise<void> {
    return new Promise((resolve) => {
      const waiting = this.attemptWaiters.get(id) ?? new Set();
      this.attemptWaiters.set(id, waiting);
      const wake = () => {
        clearTimeout(timer);
        waiting.delete(wake);
        if (waiting.size === 0 && this.attemptWaiters.get(id) === waiting) this.attemptWaiters.delete(id);
        resolve();
      };
      const timer = setTimeout(wake, timeoutMs);
      waiting.add(wake);
    });
  }

  /**
   * Shutdown: gives the leases of the running attempts back, so their events are due again at once
   * instead of after the lease, and signals their handlers to stop. The fencing token goes with the
   * lease, so a handler that still finishes cannot commit. Returns how many leases were given back.
   */
  async releaseInFlight(): Promise<number> {
    const running = [...this.inFlight.values()];
    const released = await Promise.all(
      // Given back first, then interrupted: the handler's own failure report then finds the lease gone.
      running.map(({ lease, interrupt }) =>
        this.options.store
          .fail(lease, 'interrupted: the worker shut down before finishing', this.options.clock.now())
          .catch(() => false)
          .finally(() => interrupt.abort()),
      ),
    );
    return released.filter(Boolean).length;
  }

  private async attempt(lease: Lease, event: InboxEvent, log: Logger): Promise<AttemptOutcome> {
    if (lease.attempts > this.options.retry.maxAttempts) {
      // Earlier attempts ended without a verdict (the worker died holding the lease): stop here.
      return this.recordFailure(lease, `gave up after ${lease.attempts - 1} attempts without completion`, null, log);
    }
    // One controller for both ends (lease expiry, shutdown): AbortSignal.timeout plus AbortSignal.any
    // cost two signals and a timer that outlives the attempt, per event.
    const interrupt = new AbortController();
    const expiry = setTimeout(
      () => interrupt.abort(new DOMException('the lease expired', 'TimeoutError')),
      Math.max(0, lease.expiresAt.getTime() - this.options.clock.now().getTime()),
    );
    this.inFlight.set(lease.id, { lease, interrupt });
    try {
      // A batch that rolls back runs each work again alone: the outcome kept is the one committed.
      let staleState: PaymentState | undefined;
      const outcome = await this.options.store.completeFenced(lease, async (tx, batch) => {
        const applied = appliedOutcome(await this.options.apply(tx, event, interrupt.signal, batch));
        staleState = applied.staleState;
        return applied.outcome;
      });
      const processed = { result: 'processed', outcome: outcomeText(outcome), outcomeDetail: outcome } as const;
      return staleState ? { ...processed, staleState } : processed;
    } catch (error) {
      if (error instanceof LeaseLostError) return { result: 'lease_lost' };
      const message = error instanceof Error ? `${error.name}: ${describeError(error)}` : describeError(error);
      return this.recordFailure(lease, message, this.retryAt(error, lease.attempts), log);
    } finally {
      clearTimeout(expiry);
      this.inFlight.delete(lease.id);
    }
  }

  private retryAt(error: unknown, attempts: number): Date | null {
    return retryAt(error, attempts, this.options.retry, this.options.clock.now());
  }

  private async recordFailure(lease: Lease, error: string, retryAt: Date | null, log: Logger): Promise<AttemptOutcome> {
    try {
      const recorded = await this.options.store.fail(lease, error, retryAt);
      if (!recorded) return { result: 'lease_lost' };
    } catch (storeError) {
      // The lease will expire and the sweeper will offer the event again.
      log.error({ err: storeError }, 'could not record the failure');
    }
    return { result: 'failed', error, retryAt };
  }
}
