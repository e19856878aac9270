import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from './clock.js';
import type { InboxDatabase } from './db/schema.js';
import type { ProcessingSettings } from './config/settings.js';
import { ProcessingPendingError, StoreUnavailableError } from './errors.js';
import type { DomainViews } from './extension/compose-domains.js';
import { deliveryResult, type InboxMetrics } from './observability/metrics.js';
import { InFlight } from './observability/in-flight.js';
import type { Readiness } from './observability/readiness.js';
import type { Processor } from './processing/processor.js';
import type { BackgroundWorkers } from './processing/background-workers.js';
import type { RawDelivery, VerifiedEvent } from './model/delivery.js';
import type { ProviderRegistry } from './providers/registry.js';
import type { QueueEnds } from './queue/queue.js';
import type { InboxStore, RecordResult } from './store/inbox-store.js';

export interface ReceiveResult {
  outcome: RecordResult['outcome'];
  provider: string;
  eventId: string;
}

/**
 * How long an inline request whose claim was refused waits between looks at its event when no attempt
 * in this process ends first: the attempt may run in another process, which only the store shows.
 */
const INLINE_POLL_MS = 100;

/** Background work that runs wherever the workers run (the outbox dispatcher). */
export interface BackgroundComponent {
  start(): void;
  /** Resolves once in-flight work finished or `timeoutMs` passed. */
  stop(timeoutMs: number): Promise<unknown>;
}

/**
 * The pipeline: verify -> record -> acknowledge, then process in the background (default) or before
 * answering (inline). Verification is separate from receiving, so an already verified or stored
 * event can be received without pretending it was just delivered.
 */
/** What an inbox is made of; chosen once, by the composition root (app.ts). */
export interface InboxParts {
  store: InboxStore;
  /** The database the store works on (see Inbox.database). */
  database: Kysely<InboxDatabase>;
  providers: ProviderRegistry;
  processor: Processor;
  queue: QueueEnds;
  workers: BackgroundWorkers;
  settings: ProcessingSettings;
  clock: Clock;
  logger: Logger;
  metrics: InboxMetrics;
  readiness: Readiness;
  /** What its domains show of their rows on the operator's screens, and how they erase a person. */
  domains: DomainViews;
}

export class Inbox {
  /** Where events are recorded, claimed, completed, replayed, archived and restored: the one writer of their state. */
  readonly store: InboxStore;
  /**
   * The database, for reading (the inbox's tables and your domain's) and for your domain's own
   * tables and the operator tools' (sessions, audit, runs). An event's state is written through
   * `store` alone.
   */
  readonly database: Kysely<InboxDatabase>;
  readonly providers: ProviderRegistry;
  readonly processor: Processor;
  /** How recorded events are announced (`publisher`) and how this process's workers hear of them (`subscriber`). */
  readonly queue: QueueEnds;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly metrics: InboxMetrics;
  readonly readiness: Readiness;
  readonly domains: DomainViews;
  /** Deliveries between their arrival here and their answer: how much the acknowledgements queue. */
  readonly deliveriesInFlight = new InFlight();
  private readonly workers: BackgroundWorkers;
  private readonly settings: ProcessingSettings;
  private readonly components: BackgroundComponent[] = [];

  constructor(parts: InboxParts) {
    ({
      store: this.store,
      database: this.database,
      providers: this.providers,
      processor: this.processor,
      queue: this.queue,
      workers: this.workers,
      settings: this.settings,
      clock: this.clock,
      logger: this.logger,
      metrics: this.metrics,
      readiness: this.readiness,
      domains: this.domains,
    } = parts);
  }

  /** Authenticates a raw delivery (nothing is written when that fails), then receives it. */
  async verifyAndReceive(provider: string, delivery: RawDelivery): Promise<ReceiveResult> {
    const started = performance.now();
    const seconds = () => (performance.now() - started) / 1000;
    this.deliveriesInFlight.enter();
    try {
      const received = await this.receive(this.providers.verifier(provider).verify(delivery));
      this.metrics.deliveryAnswered(provider, received.outcome === 'recorded' ? 'accepted' : 'duplicate', seconds());
      return received;
    } catch (error) {
      this.metrics.deliveryAnswered(provider, deliveryResult(error), seconds());
      throw error;
    } finally {
      this.deliveriesInFlight.leave();
    }
  }

  /** Records a verified event; resolves once the record is durable (and, inline, processed). */
  async receive(event: VerifiedEvent): Promise<ReceiveResult> {
    const recorded = await this.record(event);
    if (this.settings.mode === 'inline') await this.processInline(recorded);
    else if (recorded.status !== 'processed') this.queue.publisher?.publish(recorded.id);
    return { outcome: recorded.outcome, provider: event.provider, eventId: event.eventId };
  }

  /**
   * Back-pressure: a database that does not answer within the bound gets a 503 (the provider retries)
   * rather than a hanging request. An insert that still commits later is found as a duplicate then.
   */
  private async record(event: VerifiedEvent): Promise<RecordResult> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StoreUnavailableError(`database did not answer within ${this.settings.recordTimeoutMs} ms`)), this.settings.recordTimeoutMs);
    });
    try {
      return await Promise.race([this.store.record(event, this.providers.paymentIdOf(event)), timedOut]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Inline mode: the answer waits for processing. A concurrent duplicate waits a bounded time for the
   * in-flight attempt and gets a retryable 503 if it does not finish, so the provider comes back.
   */
  private async processInline(recorded: RecordResult): Promise<void> {
    if (recorded.status === 'processed') return;
    const attempt = await this.processor.process(recorded.id);
    if (attempt.result === 'processed') return;
    if (attempt.result === 'failed') {
      if (attempt.retryAt === null) return; // Given up: recorded for an operator; retries cannot help.
      throw new ProcessingPendingError(`processing failed and will be retried: ${attempt.error}`);
    }

    const deadline = performance.now() + this.settings.inlineWaitMs;
    for (let left = this.settings.inlineWaitMs; left > 0; left = deadline - performance.now()) {
      // An attempt running here says when it ends; one elsewhere only shows in the store.
      await this.processor.attemptEnded(recorded.id, this.processor.isAttempting(recorded.id) ? left : Math.min(INLINE_POLL_MS, left));
      const state = await this.store.eventState(recorded.id);
      if (state?.status === 'processed' || (state?.status === 'failed' && state.nextAttemptAt === null)) return;
      if (state?.status === 'failed') throw new ProcessingPendingError('processing failed and will be retried');
    }
    throw new ProcessingPendingError('event is still being processed; retry later');
  }

  /** Runs `component` beside the workers: started by start(), stopped by stop() before the store closes. */
  attach(component: BackgroundComponent): void {
    this.components.push(component);
  }

  /**
   * Starts this process's workers: queue consumption, the sweeper (which also retries failed events
   * in inline mode) and the attached components. A receive-only process does not call it.
   */
  start(): void {
    this.workers.start();
    for (const component of this.components) component.start();
    this.logger.info({ transport: this.queue.subscriber?.transport ?? null }, 'workers started');
  }

  /** Stops taking work and finishes or gives back in-flight events (stopWorkers), then closes the queue, then the store. */
  async stop(timeoutMs: number): Promise<void> {
    await this.stopWorkers(timeoutMs);
    await this.closeQueue();
    await this.store.close();
  }

  /**
   * The workers and the attached components stop taking work and finish what they hold for up to
   * `timeoutMs`; the workers then give back the leases of the events still in flight.
   */
  async stopWorkers(timeoutMs: number): Promise<void> {
    await Promise.all([this.workers.stop(timeoutMs), ...this.components.map((c) => c.stop(timeoutMs))]);
  }

  /** Closes both ends of the queue, once each (one object is often both): a publisher hands on what it still holds. */
  async closeQueue(): Promise<void> {
    const ends = new Set([this.queue.publisher, this.queue.subscriber].filter((end) => end !== null));
    await Promise.all([...ends].map((end) => end.close()));
  }
}
