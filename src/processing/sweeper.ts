import type { Logger } from 'pino';
import type { InboxStore } from '../store/inbox-store.js';
import type { WorkerPool } from './worker-pool.js';

export interface SweeperOptions {
  /** Where the due events are looked for. */
  store: InboxStore;
  /** Who the due events are handed to. */
  workers: Pick<WorkerPool, 'enqueue' | 'whenFree'>;
  logger: Logger;
  /** Events due for less than this are left to the queue transport, which is about to deliver them; default 0. */
  overdueMs?: number;
  /** Due events read per sweep; default 500. */
  batchSize?: number;
}

/**
 * Finds every event that is due (new, retry time reached, lease expired) and hands it to the workers.
 * This is what makes the queue optional: whatever the fast path missed, the sweeper picks up. It runs
 * in every worker process; claims are atomic, so sweepers racing for one event are harmless.
 */
export class Sweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private readonly store: InboxStore;
  private readonly workers: SweeperOptions['workers'];
  private readonly logger: Logger;
  private readonly overdueMs: number;
  private readonly batchSize: number;

  constructor(options: SweeperOptions) {
    ({ store: this.store, workers: this.workers, logger: this.logger, overdueMs: this.overdueMs = 0, batchSize: this.batchSize = 500 } = options);
  }

  async runOnce(): Promise<{ due: number; enqueued: number }> {
    const due = await this.store.dueEventIds(this.batchSize, this.overdueMs);
    let enqueued = 0;
    for (const id of due) if (this.workers.enqueue(id)) enqueued++;
    return { due: due.length, enqueued };
  }

  /**
   * Sweeps every `intervalMs`; after a full batch, again as soon as a worker is free, so a backlog
   * drains at the workers' pace rather than one batch per interval.
   */
  start(intervalMs: number): void {
    const tick = async () => {
      let full = false;
      this.running = this.runOnce()
        .then((counts) => {
          full = counts.due === this.batchSize && counts.enqueued > 0;
          if (counts.enqueued > 0) this.logger.debug(counts, 'sweeper enqueued due events');
        })
        .catch((error: unknown) => this.logger.warn({ err: error }, 'sweep failed; will retry'));
      await this.running;
      this.running = undefined;
      // Not part of `running`: stopping must not wait for a free worker.
      if (full) await this.workers.whenFree();
      if (this.timer) this.timer = setTimeout(() => void tick(), full ? 0 : intervalMs);
    };
    this.timer = setTimeout(() => void tick(), intervalMs);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
