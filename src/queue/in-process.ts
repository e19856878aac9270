import type { EventConsumer, EventQueue } from './queue.js';

/**
 * Announcements handed straight to the workers of the same process. A receive-only process has no
 * workers: its events reach the worker processes through their sweepers.
 */
export class InProcessQueue implements EventQueue {
  readonly transport = 'in-process';
  private workers: EventConsumer | undefined;

  publish(id: number): void {
    this.workers?.enqueue(id);
  }

  consume(workers: EventConsumer): void {
    this.workers = workers;
  }

  async stopConsuming(): Promise<void> {
    this.workers = undefined;
  }

  async close(): Promise<void> {}
}
