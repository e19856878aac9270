import { performance } from 'node:perf_hooks';
import type { InFlight } from '../observability/in-flight.js';

/** When the request thread counts as overloaded: both at once. */
export interface OverloadThresholds {
  /** Its event loop busier than this (0 to 1; 1: never overloaded). */
  utilisation: number;
  /** At least this many deliveries waiting for their answer, on average (0: the loop alone decides). */
  inFlight: number;
}

/** The slots of the shared memory: utilisation in thousandths, deliveries in flight in hundredths. */
const UTILISATION = 0;
const IN_FLIGHT = 1;

/**
 * How loaded the request thread has been lately, measured there and read by the workers' thread from
 * memory they share: a read costs nothing, so the workers can look before every event they start.
 * Overloaded means busy and queueing at once. A loop that is busy but keeps up, or deliveries that
 * wait only for a distant database, leave the acknowledgements nothing to gain from the workers'
 * yielding.
 */
export class RequestLoad {
  private readonly slots: Int32Array;

  /** `buffer`: from `RequestLoad.shared()`, passed to the other thread in its workerData. */
  constructor(
    readonly buffer: SharedArrayBuffer,
    private readonly thresholds: OverloadThresholds,
  ) {
    this.slots = new Int32Array(buffer);
  }

  static shared(thresholds: OverloadThresholds): RequestLoad {
    return new RequestLoad(new SharedArrayBuffer(2 * Int32Array.BYTES_PER_ELEMENT), thresholds);
  }

  /** The event loop's utilisation over the last measured interval. */
  get utilisation(): number {
    return Atomics.load(this.slots, UTILISATION) / 1000;
  }

  /** The deliveries waiting for their answer, on average over the last measured interval. */
  get inFlight(): number {
    return Atomics.load(this.slots, IN_FLIGHT) / 100;
  }

  get overloaded(): boolean {
    return this.utilisation > this.thresholds.utilisation && this.inFlight >= this.thresholds.inFlight;
  }

  /**
   * In the request thread: measures this thread's loop and `deliveries` every `intervalMs` and
   * publishes the last interval's figures; `whileOverloaded` hears how long each interval found
   * overloaded lasted. Returns what stops it; it never keeps the process alive.
   */
  measure(intervalMs: number, deliveries: InFlight, whileOverloaded: (seconds: number) => void = () => undefined): () => void {
    let lastLoop = performance.eventLoopUtilization();
    let lastDeliveries = deliveries.total();
    const timer = setInterval(() => {
      const loop = performance.eventLoopUtilization();
      const { idle, active, utilization } = performance.eventLoopUtilization(loop, lastLoop);
      const now = deliveries.total();
      const meanInFlight = (now.countMs - lastDeliveries.countMs) / Math.max(1, now.at - lastDeliveries.at);
      lastLoop = loop;
      lastDeliveries = now;
      Atomics.store(this.slots, UTILISATION, Math.round(utilization * 1000));
      Atomics.store(this.slots, IN_FLIGHT, Math.round(meanInFlight * 100));
      // A busy loop runs the timer late: the interval measured is longer than asked.
      if (this.overloaded) whileOverloaded((idle + active) / 1000);
    }, intervalMs);
    timer.unref();
    return () => {
      clearInterval(timer);
      Atomics.store(this.slots, UTILISATION, 0);
      Atomics.store(this.slots, IN_FLIGHT, 0);
    };
  }
}
