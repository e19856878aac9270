import type { MessagePort } from 'node:worker_threads';
import type { EventConsumer, EventPublisher, EventSubscriber } from './queue.js';
import { TurnBuffer } from './turn-buffer.js';

/** What travels between the two ends: the ids announced since the last message. */
export interface AnnouncedIds {
  kind: 'announced';
  ids: number[];
}

/**
 * Announcements from the request thread to the workers' thread (`serve` with WORKER_THREAD). The
 * ids published in one turn of the event loop go as one message, so a burst of acknowledgements costs
 * the request thread one post. Like the in-process transport it is best effort: the sweeper finds
 * whatever a restarting thread missed.
 */
export class MessagePortPublisher implements EventPublisher {
  readonly transport = 'in-process';
  private readonly pending: TurnBuffer<number>;

  constructor(post: (message: AnnouncedIds) => void) {
    this.pending = new TurnBuffer((ids) => post({ kind: 'announced', ids }));
  }

  publish(id: number): void {
    this.pending.add(id);
  }

  async close(): Promise<void> {
    this.pending.flush();
  }
}

/**
 * The workers' end: hands the ids each message carries to this thread's workers. Ids that arrive
 * before the workers start (the thread listens first, then opens its store) wait for them; once the
 * workers stop, ids are dropped, and the sweeper of whichever process runs next finds their events.
 */
export class MessagePortConsumer implements EventSubscriber {
  readonly transport = 'in-process';
  private workers: EventConsumer | undefined;
  private early: number[] | null = [];

  constructor(port: MessagePort) {
    port.on('message', (message: { kind?: string; ids?: number[] }) => {
      if (message.kind === 'announced') for (const id of message.ids ?? []) this.take(id);
    });
  }

  private take(id: number): void {
    if (this.workers) this.workers.enqueue(id);
    else this.early?.push(id);
  }

  consume(workers: EventConsumer): void {
    this.workers = workers;
    for (const id of this.early ?? []) workers.enqueue(id);
    this.early = null;
  }

  async stopConsuming(): Promise<void> {
    this.workers = undefined;
    this.early = null;
  }

  async close(): Promise<void> {}
}
