import type { Logger } from 'pino';
import type { InboxStore } from '../store/store.js';

/**
 * Finds every event that is due (new, retry time reached, lease expired) and hands it to the workers.
 * This is what makes the queue optional: whatever the fast path missed, the sweeper picks up. It runs
 * in every worker process; claims are atomic, so sweepers racing for one event are harmless.
 */
export class Sweeper {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;

  constructor(
    private readonly store: InboxStore,
    private readonly enqueue: (id: number) => boolean,
    private readonly logger: Logger,
    /** Events due for less than this are left to the queue transport, which is about to deliver them. */
    private readonly overdueMs = 0,
    private readonly batchSize = 500,
  ) {}

  async runOnce(): Promise<{ due: number; enqueued: number }> {
    const due = await this.store.dueEventIds(this.batchSize, this.overdueMs);
    let enqueued = 0;
    for (const id of due) if (this.enqueue(id)) enqueued++;
    return { due: due.length, enqueued };
  }

  start(intervalMs: number): void {
    const tick = () => {
      this.running = this.runOnce()
        .then((counts) => counts.enqueued > 0 && this.logger.debug(counts, 'sweeper enqueued due events'))
        .catch((error: unknown) => this.logger.warn({ err: error }, 'sweep failed; will retry'))
        .finally(() => {
          this.running = undefined;
          if (this.timer) this.timer = setTimeout(tick, intervalMs);
        });
    };
    this.timer = setTimeout(tick, intervalMs);
  }

  async stop(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
  }
}
