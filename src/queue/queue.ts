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
 * The receiver's end of a queue transport: how "event X is committed and ready" leaves the process
 * that recorded it. A transport only makes processing start sooner. The database stays the truth: a
 * transport may lose or repeat an announcement, the sweeper finds every event that is due, and the
 * claim lets one worker at a time process it.
 */
export interface EventPublisher {
  readonly transport: QueueTransport;
  /** Announces a committed event. Best effort: never throws and never holds up the acknowledgement. */
  publish(id: number): void;
  /** Hands on what it still holds and releases its connections, once nothing publishes any more. */
  close(): Promise<void>;
}

/** The workers' end of a queue transport: announced ids reach this process's workers through it. */
export interface EventSubscriber {
  readonly transport: QueueTransport;
  /** Hands announced ids to this process's workers until `stopConsuming`. */
  consume(workers: EventConsumer): void;
  /** Stops taking announcements; what was taken is finished by the workers (or found again later). */
  stopConsuming(): Promise<void>;
  /** Releases connections, once the workers have drained. */
  close(): Promise<void>;
}

/** A transport with both ends in one object, for a process that receives and processes (in-process, Redis Streams). */
export interface EventQueue extends EventPublisher, EventSubscriber {}

/**
 * The ends of a transport one inbox uses. An end is null where the inbox does not play its part: a
 * receiver whose workers run in another thread has no subscriber, and those workers no publisher.
 */
export interface QueueEnds {
  publisher: EventPublisher | null;
  subscriber: EventSubscriber | null;
}

/** The ends `queue` provides: a whole transport both, a publisher or a subscriber alone its own. */
export function queueEnds(queue: EventQueue | EventPublisher | EventSubscriber): QueueEnds {
  return { publisher: 'publish' in queue ? queue : null, subscriber: 'consume' in queue ? queue : null };
}
