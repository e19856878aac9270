import type { Logger } from 'pino';

/**
 * The in-process queue transport: event ids handed over right after their commit, processed by a
 * bounded number of concurrent workers. It only speeds things up; the sweeper finds whatever it
 * drops (full queue, crash), because the database is the truth.
 */
export class WorkerPool {
  private readonly waiting: number[] = [];
  /** Ids waiting or in flight, so the same event is never queued twice. */
  private readonly known = new Set<number>();
  private active = 0;
  private accepting = true;
  private idle: Array<() => void> = [];

  constructor(
    private readonly work: (id: number) => Promise<unknown>,
    private readonly concurrency: number,
    private readonly logger: Logger,
    private readonly maxQueued = 10_000,
  ) {}

  /** Returns false when the id was not taken (already known, queue full, or shutting down). */
  enqueue(id: number): boolean {
    if (!this.accepting || this.known.has(id) || this.waiting.length >= this.maxQueued) return false;
    this.known.add(id);
    this.waiting.push(id);
    this.pump();
    return true;
  }

  /** Stops taking ids, drops the ones not started, and waits for in-flight work up to `timeoutMs`. */
  async stop(timeoutMs: number): Promise<boolean> {
    this.accepting = false;
    for (const id of this.waiting.splice(0)) this.known.delete(id);
    if (this.active === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const drained = new Promise<boolean>((resolve) => this.idle.push(() => resolve(true)));
    const timedOut = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs)));
    const finished = await Promise.race([drained, timedOut]);
    clearTimeout(timer);
    return finished;
  }

  private pump(): void {
    while (this.active < this.concurrency && this.waiting.length > 0) {
      const id = this.waiting.shift()!;
      this.active++;
      this.work(id)
        .catch((error: unknown) => this.logger.error({ err: error, id }, 'worker crashed on event'))
        .finally(() => {
          this.active--;
          this.known.delete(id);
          if (this.accepting) this.pump();
          if (this.active === 0 && this.waiting.length === 0) for (const resolve of this.idle.splice(0)) resolve();
        });
    }
  }
}
