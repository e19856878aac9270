import { performance } from 'node:perf_hooks';

/**
 * How busy the request thread's event loop has been lately (its utilisation, 0 to 1), measured there
 * and read by the workers' thread from memory they share: a read costs nothing, so the workers can
 * look before every event they start.
 */
export class EventLoopLoad {
  private readonly permille: Int32Array;

  /**
   * `buffer`: from `EventLoopLoad.shared()`, passed to the other thread in its workerData. The loop is
   * busy while its last measured utilisation is above `busyAbove` (1: never).
   */
  constructor(
    readonly buffer: SharedArrayBuffer,
    private readonly busyAbove: number,
  ) {
    this.permille = new Int32Array(buffer);
  }

  static shared(busyAbove: number): EventLoopLoad {
    return new EventLoopLoad(new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT), busyAbove);
  }

  /** The utilisation over the last measured interval. */
  get utilisation(): number {
    return Atomics.load(this.permille, 0) / 1000;
  }

  get busy(): boolean {
    return this.utilisation > this.busyAbove;
  }

  /**
   * In the request thread: measures this thread's loop every `intervalMs` and publishes the last
   * interval's utilisation; `whileBusy` hears how long each interval found busy lasted. Returns what
   * stops it; it never keeps the process alive.
   */
  measure(intervalMs: number, whileBusy: (seconds: number) => void = () => undefined): () => void {
    let last = performance.eventLoopUtilization();
    const timer = setInterval(() => {
      const now = performance.eventLoopUtilization();
      const { idle, active, utilization } = performance.eventLoopUtilization(now, last);
      last = now;
      Atomics.store(this.permille, 0, Math.round(utilization * 1000));
      // A busy loop runs the timer late: the interval measured is longer than asked.
      if (this.busy) whileBusy((idle + active) / 1000);
    }, intervalMs);
    timer.unref();
    return () => {
      clearInterval(timer);
      Atomics.store(this.permille, 0, 0);
    };
  }
}
