import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { describeError, PermanentError } from '../errors.js';
import { retryAt, type RetryPolicy } from '../processing/retry-policy.js';
import type { ClaimedMessage, OutboxLease, OutboxStore } from './outbox-store.js';
import { NotConfigured, type Delivered, type OutboxTransports } from './transport.js';

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
  /**
   * Rows claimed per lane at a time. Each claim is two statements whatever its size, so claiming
   * ahead saves statements, but a claimed row waits behind the deliveries before it in its lane:
   * `leaseMs` must cover that many of the slowest deliveries.
   */
  claimAhead: number;
  /** How often to look for due rows when the last look found fewer than a batch. */
  pollIntervalMs: number;
  /**
   * True while this process's event processing is behind (every worker busy): the dispatcher then
   * dispatches one batch per poll interval instead of batch after batch, so that on a machine short
   * of CPU the events' own state comes first and their side effects catch up after.
   */
  eventsBehind?: () => boolean;
  clock: Clock;
  logger: Logger;
  batchSize?: number;
}

/** A claimed row's delivery: `recorded` settles once its verdict is written (or not, when the lease was lost). */
interface Delivery {
  recorded: Promise<DispatchResult>;
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

  /**
   * Dispatches the rows due now (one batch), `concurrency` at a time; returns what happened to them.
   * Rows are claimed `concurrency x claimAhead` at a time, and a lane goes on to its next row while
   * the last one's verdict is written, so claims and finishes are few statements for many rows.
   */
  async runOnce(): Promise<DispatchCounts> {
    const { store, owner, leaseMs, concurrency, claimAhead, logger } = this.options;
    const due = await store.dueIds(this.batchSize);
    const counts: DispatchCounts = { due: due.length, sent: 0, skipped: 0, retrying: 0, failed: 0, not_claimed: 0, lease_lost: 0, error: 0 };
    const claimed: ClaimedMessage[] = [];
    const recorded: Array<Promise<void>> = [];
    let unclaimed = 0;
    let claiming: Promise<void> | undefined;
    // One lane claims the next chunk for all; the others wait for it.
    const claimNext = () =>
      (claiming ??= (async () => {
        const ids = due.slice(unclaimed, (unclaimed += concurrency * claimAhead));
        for (const [index, outcome] of (await Promise.allSettled(ids.map((id) => store.claim(id, owner, leaseMs)))).entries()) {
          if (outcome.status === 'rejected') {
            logger.warn({ err: outcome.reason, outboxId: ids[index] }, 'could not claim an outbox row; will look again');
            counts.error++;
          } else if (outcome.value) claimed.push(outcome.value);
          else counts.not_claimed++;
        }
      })().finally(() => (claiming = undefined)));
    const stopping = () => this.stopping?.signal.aborted === true;
    const lane = async () => {
      // A stopping dispatcher finishes the deliveries it started and starts no more.
      while (!stopping()) {
        const next = claimed.shift();
        if (next) {
          const delivery = await this.deliver(next);
          recorded.push(delivery.recorded.then((result) => void counts[result]++));
        } else if (claiming || unclaimed < due.length) await claimNext();
        else return;
      }
    };
    await Promise.all(Array.from({ length: Math.min(concurrency, due.length) }, lane));
    await Promise.all(recorded);
    // Rows it claimed but never started go back at once, not after their lease.
    await store
      .release(claimed.splice(0).map((message) => message.lease))
      .catch((error: unknown) => logger.warn({ err: error }, 'could not give back claimed outbox rows; they are taken over when their lease ends'));
    return counts;
  }

  /** Performs one claimed row's side effect; its verdict is recorded in the background (see Delivery). */
  private async deliver({ lease, message }: ClaimedMessage): Promise<Delivery> {
    const { store, transports, logger } = this.options;
    const log = logger.child({ outboxId: lease.id, kind: message.kind, idempotencyKey: message.idempotencyKey, attempt: lease.attempts });

    if (lease.attempts > this.options.retry.maxAttempts) {
      // Earlier attempts ended without a verdict (the dispatcher died holding the lease): stop here.
      return { recorded: this.recordFailure(lease, new PermanentError(`gave up after ${lease.attempts - 1} attempts without completion`), log) };
    }
    const transport = transports[message.kind];
    if (!transport) return { recorded: this.recordFailure(lease, new PermanentError(`no transport for outbox kind "${message.kind}"`), log) };

    let delivered: Delivered;
    try {
      delivered = await transport.deliver(message);
    } catch (error) {
      return { recorded: this.recordFailure(lease, error, log) };
    }
    const finished = async (): Promise<DispatchResult> => {
      try {
        if (!(await store.finish(lease, delivered.status, delivered.outcome))) {
          log.warn({ outcome: delivered.outcome }, 'delivered, but the lease was taken over; the new owner delivers again under the same key');
          return 'lease_lost';
        }
      } catch (error) {
        // The lease expires and the row is delivered again, under the same key.
        log.error({ err: error, outcome: delivered.outcome }, 'delivered, but could not record it');
        return 'error';
      }
      if (delivered.status === 'skipped') log.info({ outcome: delivered.outcome }, 'outbox message skipped');
      else log.info({ outcome: delivered.outcome }, 'outbox message delivered');
      return delivered.status;
    };
    return { recorded: finished() };
  }

  private async recordFailure(lease: OutboxLease, error: unknown, log: Logger): Promise<DispatchResult> {
    const { store, retry, clock } = this.options;
    const message = describeError(error);
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
    // Said once here rather than with every row: at a thousand payments a second a warning per row
    // would bury everything else in the log.
    for (const [kind, transport] of Object.entries(this.options.transports)) {
      if (transport instanceof NotConfigured) {
        this.options.logger.warn(
          { kind },
          `${kind} rows are marked skipped, not delivered: ${transport.reason} (once it is set, \`webhook-inbox outbox retry --status skipped\` sends them)`,
        );
      }
    }
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
        if (due < this.batchSize || this.options.eventsBehind?.()) await sleep(this.options.pollIntervalMs, undefined, { signal: stopping.signal }).catch(() => undefined);
      }
    })();
  }

  /**
   * Starts no more deliveries, gives back the rows it claimed and did not start, and waits up to
   * `timeoutMs` for those in flight; returns false when some were still running (their rows keep
   * the lease and are delivered again after it expires).
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
