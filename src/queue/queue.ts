import type { WorkerPool } from '../processing/worker-pool.js';

export type QueueTransport = 'in-process' | 'redis-streams';

/**
 * The queue port: how "event X is committed and ready" travels from a receiver to the workers. It
 * only makes processing start sooner. The database stays the truth: a transport may lose or repeat
 * an announcement, the sweeper finds every event that is due, and the claim lets one worker at a time
 * process it.
 */
export interface EventQueue {
  readonly transport: QueueTransport;
  /** Announces a committed event. Best effort: never throws and never holds up the acknowledgement. */
  publish(id: number): void;
  /** Worker processes: hands announced ids to this process's workers until `stopConsuming`. */
  consume(workers: WorkerPool): void;
  /** Stops taking announcements; what was taken is finished by the workers (or found again later). */
  stopConsuming(): Promise<void>;
  /** Releases connections, once the workers have drained. */
  close(): Promise<void>;
}
