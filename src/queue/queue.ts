/** What a transport hands announced event ids to: this process's workers (processing/worker-pool.ts). */
export interface EventConsumer {
  /** Offers an id; false when it was not queued now. `onSettled` runs once an attempt on it has finished. */
  enqueue(id: number, onSettled?: () => void): boolean;
  /** Workers that would start on an id right away (negative when ids are already waiting). */
  readonly freeSlots: number;
  /** Resolves when a worker is free, or when the consumer stops accepting work. */
  whenFree(): Promise<void>;
}

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
  consume(workers: EventConsumer): void;
  /** Stops taking announcements; what was taken is finished by the workers (or found again later). */
  stopConsuming(): Promise<void>;
  /** Releases connections, once the workers have drained. */
  close(): Promise<void>;
}
