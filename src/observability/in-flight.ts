import { performance } from 'node:perf_hooks';

/**
 * How many things are under way (deliveries waiting for their answer, say), integrated over time:
 * each start and end first adds the count times the time since the last change to a running total,
 * so two readings of `total()` give the mean count between them, however short-lived the things are.
 */
export class InFlight {
  private count = 0;
  private countMs = 0;
  private changedAt = performance.now();

  enter(): void {
    this.advance();
    this.count++;
  }

  leave(): void {
    this.advance();
    this.count--;
  }

  /** The count integrated over time so far, in count-milliseconds, and when it was read. */
  total(): { countMs: number; at: number } {
    this.advance();
    return { countMs: this.countMs, at: this.changedAt };
  }

  private advance(): void {
    const now = performance.now();
    this.countMs += this.count * (now - this.changedAt);
    this.changedAt = now;
  }
}
