import type { Logger } from 'pino';
import type { EventQueue } from '../queue/queue.js';
import type { Processor } from './processor.js';
import type { Sweeper } from './sweeper.js';
import type { WorkerPool } from './worker-pool.js';

/** The background side of one process: queue consumption and the sweeper, feeding one worker pool. */
export class BackgroundWorkers {
  private started = false;

  constructor(
    private readonly queue: EventQueue,
    private readonly pool: WorkerPool,
    private readonly sweeper: Sweeper,
    private readonly processor: Processor,
    private readonly sweepIntervalMs: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.started = true;
    this.sweeper.start(this.sweepIntervalMs);
    this.queue.consume(this.pool);
  }

  /**
   * Stops taking work (no new reads, sweeps or claims), lets in-flight events finish for up to
   * `timeoutMs`, then gives back the leases of those still running so other workers take them at once.
   */
  async stop(timeoutMs: number): Promise<void> {
    if (!this.started) return;
    await Promise.all([this.sweeper.stop(), this.queue.stopConsuming()]);
    if (await this.pool.stop(timeoutMs)) return;
    const released = await this.processor.releaseInFlight();
    this.logger.warn({ released }, 'shutdown timeout: in-flight events given back to the other workers');
  }
}
