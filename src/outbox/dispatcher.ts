import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { PermanentError } from '../errors.js';
import { retryAt, type RetryPolicy } from '../processing/retry-policy.js';
import type { OutboxLease, OutboxStore } from './outbox-store.js';
import type { OutboxTransports } from './transport.js';

export type DispatchResult = 'sent' | 'skipped' | 'retrying' | 'failed' | 'not_claimed' | 'lease_lost' | 'error';

export type DispatchCounts = Record<DispatchResult, number> & { due: number };

export interface DispatcherOptions {
  store: OutboxStore;
  transports: OutboxTransports;
  /** Identifies this process in lease_owner. */
  owner: string;
  /** Must outlast the slowest delivery (the transports' timeouts), or a row is delivered twice. */
  leaseMs: number;
  retry: RetryPolicy;
  /** Deliveries in flight at once. */
  concurrency: number;
  /** How often to look for due rows when the last look found fewer than a batch. */
  pollIntervalMs: number;
  clock: Clock;
  logger: Logger;
  batchSize?: number;
}

/**
 * Delivers outbox rows at least once, each under its stable idempotency key: claim the row's lease,
 * perform the side effect, mark it sent fenced by the lease token. A crash between the delivery and
 * the mark leaves the row leased; after the lease expires another dispatcher delivers it again with
 * the same key, which the downstream deduplicates.
 */
export class OutboxDispatcher {
  private readonly batchSize: number;
  private stopping: AbortController | undefined;
  private loop: Promise<void> | undefined;

  constructor(private readonly options: DispatcherOptions) {
    this.batchSize = options.batchSize ?? 100;
  }

  /** Dispatches the rows due now (one batch), `concurrency` at a time; returns what happened to them. */
  async runOnce(): Promise<DispatchCounts> {
    const due = await this.options.store.dueIds(this.batchSize);
    const counts: DispatchCounts = { due: due.length, sent: 0, skipped: 0, retrying: 0, failed: 0, not_claimed: 0, lease_lost: 0, error: 0 };
    let next = 0;
    const lane = async () => {
      // A stopping dispatcher finishes the deliveries it started and starts no more.
      while (next < due.length && !this.stopping?.signal.aborted) {
        counts[await this.dispatch(due[next++]!)]++;
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.options.concurrency, due.length) }, lane));
    return counts;
  }

  /** Claims and delivers one row; does nothing unless the claim succeeds. */
  async dispatch(id: number): Promise<DispatchResult> {
    const { store, transports, owner, leaseMs, logger } = this.options;
    let claimed;
    try {
      claimed = await store.claim(id, owner, leaseMs);
    } catch (error) {
      logger.warn({ err: error, outboxId: id }, 'could not claim an outbox row; will look again');
      return 'error';
    }
    if (!claimed) return 'not_claimed';
    const { lease, message } = claimed;
    const log = logger.child({ outboxId: id, kind: message.kind, idempotencyKey: message.idempotencyKey, attempt: lease.attempts });

    if (lease.attempts > this.options.retry.maxAttempts) {
      // Earlier attempts ended without a verdict (the dispatcher died holding the lease): stop here.
      return this.recordFailure(lease, new PermanentError(`gave up after ${lease.attempts - 1} attempts without completion`), log);
    }
    const transport = transports[message.kind];
    if (!transport) return this.recordFailure(lease, new PermanentError(`no transport for outbox kind "${message.kind}"`), log);

    try {
      const delivered = await transport.deliver(message);
      const recorded = await store.finish(lease, delivered.status, delivered.outcome);
      if (!recorded) {
        log.warn({ outcome: delivered.outcome }, 'delivered, but the lease was taken over; the new owner delivers again under the same key');
        return 'lease_lost';
      }
      if (delivered.status === 'skipped') log.info({ outcome: delivered.outcome }, 'outbox message skipped');
      else log.info({ outcome: delivered.outcome }, 'outbox message delivered');
      return delivered.status;
    } catch (error) {
      return this.recordFailure(lease, error, log);
    }
  }

  private async recordFailure(lease: OutboxLease, error: unknown, log: Logger): Promise<DispatchResult> {
    const { store, retry, clock } = this.options;
    const message = error instanceof Error ? error.message : String(error);
    const at = retryAt(error, lease.attempts, retry, clock.now());
    try {
      if (!(await store.fail(lease, message, at))) return 'lease_lost';
    } catch (storeError) {
      // The lease expires and the row is offered again.
      log.error({ err: storeError }, 'could not record the failed delivery');
      return 'error';
    }
    log.warn({ error: message, retryAt: at?.toISOString() ?? null }, at ? 'outbox delivery failed; will retry' : 'outbox delivery failed; no automatic retry left');
    return at ? 'retrying' : 'failed';
  }

  /** Dispatches in the background until stopped: at once while full batches keep coming, else every poll interval. */
  start(): void {
    if (this.loop) return;
    const stopping = new AbortController();
    this.stopping = stopping;
    this.loop = (async () => {
      while (!stopping.signal.aborted) {
        let due = 0;
        try {
          due = (await this.runOnce()).due;
        } catch (error) {
          this.options.logger.warn({ err: error }, 'outbox dispatch failed; will retry');
        }
        if (due < this.batchSize) await sleep(this.options.pollIntervalMs, undefined, { signal: stopping.signal }).catch(() => undefined);
      }
    })();
  }

  /**
   * Starts no more deliveries and waits up to `timeoutMs` for those in flight; returns false when
   * some were still running (their rows keep the lease and are delivered again after it expires).
   */
  async stop(timeoutMs: number): Promise<boolean> {
    this.stopping?.abort();
    const loop = this.loop;
    this.loop = undefined;
    let finished = true;
    if (loop) {
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
      finished = await Promise.race([loop.then(() => true), timedOut]);
      clearTimeout(timer);
    }
    for (const transport of new Set(Object.values(this.options.transports))) transport.close?.();
    return finished;
  }
}
