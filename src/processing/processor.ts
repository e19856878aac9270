import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { EventApplier } from '../domain/handlers.js';
import { LeaseLostError, PermanentError, RetryLaterError } from '../errors.js';
import type { InboxStore, Lease } from '../store/store.js';
import { retryDelayMs, type RetryPolicy } from './retry-policy.js';

/**
 * `handOff`: an event of the same payment that became due while this one held the payment (its claim
 * was refused); the caller offers it at once instead of leaving it to the sweeper.
 */
export type ProcessResult =
  | { result: 'processed'; outcome: string; handOff?: number }
  | { result: 'not_claimed' }
  | { result: 'failed'; error: string; retryAt: Date | null; handOff?: number }
  | { result: 'lease_lost' };

export interface ProcessorOptions {
  store: InboxStore;
  apply: EventApplier;
  /** Identifies this worker in lease_owner (host:pid:...). */
  owner: string;
  leaseMs: number;
  retry: RetryPolicy;
  clock: Clock;
  logger: Logger;
}

/**
 * Processes one event exactly once: claim the lease, run the business transaction fenced by it,
 * record a failure with its retry time. Safe to call for any id, any number of times, from any
 * number of workers: only the lease holder does anything.
 */
export class Processor {
  /** Leases held right now, with what stops their handlers, so a shutdown can hand them back. */
  private readonly inFlight = new Map<number, { lease: Lease; interrupt: AbortController }>();

  constructor(private readonly options: ProcessorOptions) {}

  async process(id: number): Promise<ProcessResult> {
    const { store, owner, leaseMs, logger, clock } = this.options;
    const claimed = await store.claim(id, owner, leaseMs);
    if (!claimed) return { result: 'not_claimed' };
    const { lease, event } = claimed;
    const log = logger.child({ provider: event.provider, eventId: event.eventId, eventType: event.eventType, attempt: lease.attempts });

    if (lease.attempts > this.options.retry.maxAttempts) {
      // Earlier attempts ended without a verdict (the worker died holding the lease): stop here.
      return this.recordFailure(lease, `gave up after ${lease.attempts - 1} attempts without completion`, null, log);
    }

    const started = clock.now().getTime();
    const interrupt = new AbortController();
    const signal = AbortSignal.any([AbortSignal.timeout(Math.max(0, lease.expiresAt.getTime() - started)), interrupt.signal]);
    this.inFlight.set(lease.id, { lease, interrupt });
    try {
      const outcome = await store.completeFenced(lease, (tx) => this.options.apply(tx, event, signal));
      log.info({ outcome, processingMs: clock.now().getTime() - started }, 'event processed');
      return { result: 'processed', outcome, ...(await this.handOff(lease)) };
    } catch (error) {
      if (error instanceof LeaseLostError) {
        log.warn({ processingMs: clock.now().getTime() - started }, 'lease lost before commit; changes rolled back');
        return { result: 'lease_lost' };
      }
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      return this.recordFailure(lease, message, this.retryAt(error, lease.attempts), log);
    } finally {
      this.inFlight.delete(lease.id);
    }
  }

  /**
   * Shutdown: signals the running handlers to stop and gives their leases back, so the events are due
   * again at once instead of after the lease. The fencing token goes with the lease, so a handler
   * that still finishes cannot commit. Returns how many leases were given back.
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

  private retryAt(error: unknown, attempts: number): Date | null {
    const { retry, clock } = this.options;
    if (error instanceof PermanentError || attempts >= retry.maxAttempts) return null;
    const delay = error instanceof RetryLaterError && error.retryAfterMs !== undefined ? error.retryAfterMs : retryDelayMs(attempts, retry);
    return new Date(clock.now().getTime() + delay);
  }

  private async recordFailure(lease: Lease, error: string, retryAt: Date | null, log: Logger): Promise<ProcessResult> {
    try {
      const recorded = await this.options.store.fail(lease, error, retryAt);
      if (!recorded) return { result: 'lease_lost' };
    } catch (storeError) {
      // The lease will expire and the sweeper will offer the event again.
      log.error({ err: storeError }, 'could not record the failure');
    }
    log.warn({ error, retryAt: retryAt?.toISOString() ?? null }, retryAt ? 'event processing failed; will retry' : 'event processing failed; no automatic retry left');
    return { result: 'failed', error, retryAt, ...(await this.handOff(lease)) };
  }

  private async handOff(lease: Lease): Promise<{ handOff?: number }> {
    if (!lease.payment) return {};
    const next = await this.options.store.nextDueEventOfPayment(lease.payment).catch(() => null);
    return next === null ? {} : { handOff: next };
  }
}
