import type { Logger } from 'pino';
import type { EventConsumer } from '../queue/queue.js';

/**
 * When the workers give way to something more urgent (the acknowledgements): while `active()` says so,
 * at most `concurrency` of them run.
 */
export interface WorkerYield {
  active: () => boolean;
  concurrency: number;
}

export interface WorkerPoolOptions {
  /** One attempt on an event. */
  work: (id: number) => Promise<unknown>;
  /** Attempts running at once (WORKER_CONCURRENCY). */
  concurrency: number;
  logger: Logger;
  /** When fewer run, for something more urgent; by default they never give way. */
  yielding?: WorkerYield | null;
  /** Ids waiting beyond this are dropped, for the sweeper to find again; default 10,000. */
  maxQueued?: number;
}

/**
 * The workers of one process: event ids offered by a queue transport or the sweeper, processed by a
 * bounded number of concurrent workers. Offering an id only speeds things up; the sweeper finds
 * whatever the pool drops (full queue, crash, shutdown), because the database is the truth.
 */
export class WorkerPool implements EventConsumer {
  private readonly waiting: number[] = [];
  /** Ids waiting or in flight (so the same event is never queued twice), with who to tell when done. */
  private readonly known = new Map<number, Array<() => void>>();
  private active = 0;
  private accepting = true;
  private idle: Array<() => void> = [];
  private slotWaiters: Array<() => void> = [];

  private readonly work: (id: number) => Promise<unknown>;
  private readonly concurrency: number;
  private readonly logger: Logger;
  private readonly yielding: WorkerYield | null;
  private readonly maxQueued: number;

  constructor(options: WorkerPoolOptions) {
    ({ work: this.work, concurrency: this.concurrency, logger: this.logger, yielding: this.yielding = null, maxQueued: this.maxQueued = 10_000 } = options);
  }

  /**
   * Returns true when the id was queued now. `onSettled` runs once an attempt on the id has finished,
   * also when the id was already queued; it never runs for an id the pool dropped or refused.
   */
  enqueue(id: number, onSettled?: () => void): boolean {
    if (!this.accepting) return false;
    const listeners = this.known.get(id);
    if (listeners) {
      if (onSettled) listeners.push(onSettled);
      return false;
    }
    if (this.waiting.length >= this.maxQueued) return false;
    this.known.set(id, onSettled ? [onSettled] : []);
    this.waiting.push(id);
    this.pump();
    return true;
  }

  /** Workers that would start on an id right away (negative when ids are already waiting). */
  get freeSlots(): number {
    return this.limit() - this.active - this.waiting.length;
  }

  /** Resolves when a worker is free, or when the pool stops accepting work. */
  async whenFree(): Promise<void> {
    if (this.freeSlots > 0 || !this.accepting) return;
    await new Promise<void>((resolve) => this.slotWaiters.push(resolve));
  }

  /** Stops taking ids, drops the ones not started, and waits for in-flight work up to `timeoutMs`. */
  async stop(timeoutMs: number): Promise<boolean> {
    this.accepting = false;
    for (const resolve of this.slotWaiters.splice(0)) resolve();
    for (const id of this.waiting.splice(0)) this.known.delete(id);
    if (this.active === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const drained = new Promise<boolean>((resolve) => this.idle.push(() => resolve(true)));
    const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const finished = await Promise.race([drained, timedOut]);
    clearTimeout(timer);
    return finished;
  }

  /**
   * Workers allowed to run now. Looked at before each start: while yielding, a finishing worker starts
   * nothing until the running ones are within the limit, and the first to finish after the yield ends
   * starts the rest (at least one worker runs while ids wait, so one always finishes).
   */
  private limit(): number {
    return this.yielding?.active() ? Math.min(this.yielding.concurrency, this.concurrency) : this.concurrency;
  }

  private pump(): void {
    while (this.active < this.limit() && this.waiting.length > 0) {
      const id = this.waiting.shift()!;
      this.active++;
      this.work(id)
        .catch((error: unknown) => this.logger.error({ err: error, id }, 'worker crashed on event'))
        .finally(() => {
          this.active--;
          for (const settled of this.known.get(id) ?? []) settled();
          this.known.delete(id);
          if (this.accepting) this.pump();
          if (this.freeSlots > 0) for (const resolve of this.slotWaiters.splice(0)) resolve();
          if (this.active === 0 && this.waiting.length === 0) for (const resolve of this.idle.splice(0)) resolve();
        });
    }
  }
}
