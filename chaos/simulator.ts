import { setTimeout as sleep } from 'node:timers/promises';
import { deliver } from '../test/support/load.js';
import type { SimulatedEvent, SimulatedPayment } from './lifecycles.js';
import type { Random } from './random.js';

export interface SimulatorOptions {
  /** Receiver base URLs; each attempt goes to one of them at random, as behind a load balancer. */
  receivers: readonly string[];
  /** Pace of first deliveries; retries and redeliveries come on top. */
  eventsPerSecond: number;
  /** Requests in flight at most. */
  concurrency: number;
  /** A delivery without an answer after this counts as failed, like a refused connection. */
  timeoutMs: number;
  /** Retry after a failed attempt: base * 2^attempt with jitter, capped (minutes to hours at the real providers). */
  retryBaseMs: number;
  retryMaxMs: number;
  /** Share of events delivered once or twice more after their 2xx. */
  redeliveryShare: number;
  /** Share of events whose first delivery is a burst of identical concurrent copies. */
  burstShare: number;
  burstSize: number;
  random: Random;
}

export type DeliveryKind = 'first' | 'burst' | 'retry' | 'redelivery';

/** What one HTTP delivery got: status 0 for a refused connection or a timeout. */
export interface DeliveryRecord {
  event: number;
  kind: DeliveryKind;
  receiver: number;
  startedAt: number;
  endedAt: number;
  status: number;
  outcome?: string;
  error?: string;
}

/**
 * Plays Stripe, Razorpay and PayU at once: every event is delivered until it gets a 2xx, with
 * exponential backoff; some come as concurrent bursts, some again after their 2xx; the events of a
 * payment arrive shuffled. Every delivery and its answer is recorded.
 */
export class ProviderSimulator {
  readonly events: SimulatedEvent[];
  /** Per event: the index of its payment in `payments`. */
  private readonly paymentOf: number[];
  private highestStartedPayment = -1;
  readonly deliveries: DeliveryRecord[] = [];
  /** Per event: when its first 2xx came (ms since the epoch), or undefined. */
  readonly acknowledgedAt: Array<number | undefined>;
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];
  private started = 0;

  constructor(
    readonly payments: readonly SimulatedPayment[],
    private readonly options: SimulatorOptions,
  ) {
    const order = shuffledNearby(payments, options.random);
    this.events = order.map(({ event }) => event);
    this.paymentOf = order.map(({ payment }) => payment);
    this.acknowledgedAt = new Array<number | undefined>(this.events.length);
  }

  /** Events whose first delivery has started: the fault injector paces itself on this. */
  get progress(): number {
    return this.started;
  }

  get acknowledged(): number {
    return this.acknowledgedAt.filter((at) => at !== undefined).length;
  }

  /** A payment none of whose events was sent yet, but soon will be; undefined near the end. */
  upcomingPayment(): SimulatedPayment | undefined {
    return this.payments[this.highestStartedPayment + NEARBY + 1];
  }

  /** Resolves once every event got its 2xx and every redelivery was answered with one. */
  async run(): Promise<void> {
    const begin = Date.now();
    const lives: Array<Promise<void>> = [];
    for (const [i] of this.events.entries()) {
      const due = begin + (i * 1000) / this.options.eventsPerSecond;
      if (due > Date.now()) await sleep(due - Date.now());
      // A backlog beyond what the receivers take is the receivers' problem, not the simulator's memory.
      while (this.waiting.length > this.options.concurrency * 4) await sleep(20);
      this.started++;
      this.highestStartedPayment = Math.max(this.highestStartedPayment, this.paymentOf[i]!);
      lives.push(this.deliverEvent(i));
    }
    await Promise.all(lives);
  }

  private async deliverEvent(event: number): Promise<void> {
    const { random, burstShare, burstSize, redeliveryShare } = this.options;
    const copies = random.chance(burstShare) ? burstSize : 1;
    const first = await Promise.all(Array.from({ length: copies }, () => this.send(event, copies > 1 ? 'burst' : 'first')));
    if (!first.some(isAcknowledged)) await this.untilAcknowledged(event, 'retry');
    if (!random.chance(redeliveryShare)) return;
    for (let extra = random.chance(0.3) ? 2 : 1; extra > 0; extra--) {
      await sleep(random.between(50, 2000));
      await this.untilAcknowledged(event, 'redelivery');
    }
  }

  /** Delivers until a 2xx, backing off between attempts. */
  private async untilAcknowledged(event: number, kind: DeliveryKind): Promise<void> {
    const { random, retryBaseMs, retryMaxMs } = this.options;
    for (let attempt = 0; ; attempt++) {
      if (kind === 'retry' || attempt > 0) {
        const delay = Math.min(retryMaxMs, retryBaseMs * 2 ** Math.min(attempt, 16));
        await sleep(delay / 2 + random.next() * (delay / 2));
      }
      if (isAcknowledged(await this.send(event, attempt === 0 ? kind : 'retry'))) return;
    }
  }

  private async send(event: number, kind: DeliveryKind): Promise<DeliveryRecord> {
    await this.slot();
    try {
      const receiver = this.options.random.between(0, this.options.receivers.length - 1);
      const startedAt = Date.now();
      // Signed at each attempt: a Stripe retry carries a fresh timestamp.
      const answer = await deliver(this.options.receivers[receiver]!, this.events[event]!.sign(), this.options.timeoutMs);
      const record: DeliveryRecord = { event, kind, receiver, startedAt, endedAt: Date.now(), ...answer };
      this.deliveries.push(record);
      if (isAcknowledged(record)) this.acknowledgedAt[event] ??= record.endedAt;
      return record;
    } finally {
      this.release();
    }
  }

  private async slot(): Promise<void> {
    if (this.inFlight < this.options.concurrency) {
      this.inFlight++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }

  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.inFlight--;
  }
}

/** The events of payment n are sent among those of payments n .. n + NEARBY. */
const NEARBY = 3;

export function isAcknowledged(record: { status: number }): boolean {
  return record.status >= 200 && record.status < 300;
}

/**
 * Orders all events so that each payment's events are close together (a payment's lifecycle takes
 * seconds, not the whole run) but shuffled: refunds before captures, captures before creations.
 */
function shuffledNearby(payments: readonly SimulatedPayment[], random: Random): Array<{ event: SimulatedEvent; payment: number }> {
  const keyed = payments.flatMap((payment, n) => payment.events.map((event) => ({ event, payment: n, key: n + random.next() * NEARBY })));
  return keyed.sort((a, b) => a.key - b.key);
}
