import type { Logger } from 'pino';
import type { EventSubscriber } from '../queue/queue.js';
import type { Processor } from './processor.js';
import type { Sweeper } from './sweeper.js';
import type { WorkerPool } from './worker-pool.js';

export interface BackgroundWorkersOptions {
  /** Where announced events come from; null where none are announced to this process (the sweeper finds them). */
  subscriber: EventSubscriber | null;
  /** The workers the subscriber and the sweeper feed. */
  pool: WorkerPool;
  sweeper: Sweeper;
  /** Gives back the leases of the events still in flight when a shutdown's time is up. */
  processor: Processor;
  /** How often the sweeper looks for due events (SWEEP_INTERVAL_MS). */
  sweepIntervalMs: number;
  logger: Logger;
}

/** The background side of one process: queue consumption and the sweeper, feeding one worker pool. */
export class BackgroundWorkers {
  private started = false;

  constructor(private readonly options: BackgroundWorkersOptions) {}

  start(): void {
    const { sweeper, sweepIntervalMs, subscriber, pool } = this.options;
    this.started = true;
    sweeper.start(sweepIntervalMs);
    subscriber?.consume(pool);
  }

  /**
   * Stops taking work (no new reads, sweeps or claims), lets in-flight events finish for up to
   * `timeoutMs`, then gives back the leases of those still running so other workers take them at once.
   */
  async stop(timeoutMs: number): Promise<void> {
    if (!this.started) return;
    const { sweeper, subscriber, pool, processor, logger } = this.options;
    await Promise.all([sweeper.stop(), subscriber?.stopConsuming()]);
    if (await pool.stop(timeoutMs)) return;
    const released = await processor.releaseInFlight();
    logger.warn({ released }, 'shutdown timeout: in-flight events given back to the other workers');
  }
}
