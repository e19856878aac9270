import type { Logger } from 'pino';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Clock } from '../clock.js';
import type { PaymentState } from '../model/payment-event.js';
import { isProviderName, PROVIDER_NAMES } from '../model/delivery.js';
import type { OutboxStatus } from '../db/schema.js';
import type { PipelineStats } from '../store/inbox-store.js';
import type { AdminSignInRefusal, AdminSignInVia, AttemptResult, DeliveryResult, InboxMetrics } from './metrics.js';

const DELIVERY_RESULTS: DeliveryResult[] = ['accepted', 'duplicate', 'invalid_signature', 'bad_request', 'unavailable', 'error'];
const ATTEMPT_RESULTS: AttemptResult[] = ['processed', 'retry_scheduled', 'failed', 'lease_lost'];
const ADMIN_SIGN_IN_VIAS: AdminSignInVia[] = ['form', 'bearer'];
const ADMIN_SIGN_IN_REFUSALS: AdminSignInRefusal[] = ['unknown_token', 'rate_limited'];
/** Acknowledgements are milliseconds when healthy; the upper buckets catch a struggling database. */
const ACK_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Receipt to processed spans retries, so it reaches hours. */
const LATENCY_BUCKETS = [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600, 14_400];
const STATS_MAX_AGE_MS = 5000;

/**
 * Process metrics (CPU, memory, event loop, GC) describe the process, not one inbox, so they live in
 * one registry per process; each inbox has its own registry for the rest, so several inboxes in one
 * process (tests, embedding services) never share or collide.
 */
let processRegistry: Registry | undefined;
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

export interface PrometheusMetricsOptions {
  /** Counts read from the store when scraped, at most once per STATS_MAX_AGE_MS. */
  stats: () => Promise<PipelineStats>;
  /** Outbox rows per status, read when scraped and cached like `stats`. */
  outboxStats?: () => Promise<Record<OutboxStatus, number>>;
  clock: Clock;
  logger: Logger;
}

/**
 * The metrics port over prom-client. Pipeline events are in-memory increments; the gauges that need
 * the database are computed when scraped, from one cached store query shared by all of them.
 */
export class PrometheusMetrics implements InboxMetrics {
  readonly registry = new Registry();
  private readonly deliveries: Counter<'provider' | 'result'>;
  private readonly ackSeconds: Histogram<'provider'>;
  private readonly attempts: Counter<'provider' | 'result'>;
  private readonly attemptSeconds: Histogram<'provider'>;
  private readonly retries: Counter<'provider'>;
  private readonly latencySeconds: Histogram<'provider'>;
  private readonly takeovers: Counter<'provider'>;
  private readonly staleTransitions: Counter<'provider' | 'state'>;
  private readonly yieldSeconds: Counter;
  private readonly signInRefusals: Counter<'via' | 'reason'>;

  constructor(options: PrometheusMetricsOptions) {
    const registers = [this.registry];
    const perProvider = { labelNames: ['provider'] as const, registers };
    this.deliveries = new Counter({
      name: 'webhook_inbox_deliveries_total',
      help: 'Deliveries answered, by provider and result (accepted, duplicate, invalid_signature, bad_request, unavailable, error)',
      labelNames: ['provider', 'result'],
      registers,
    });
    this.ackSeconds = new Histogram({
      name: 'webhook_inbox_ack_duration_seconds',
      help: 'Time from a delivery read to its 200 (accepted and duplicate deliveries)',
      buckets: ACK_BUCKETS,
      ...perProvider,
    });
    this.attempts = new Counter({
      name: 'webhook_inbox_processing_attempts_total',
      help: 'Processing attempts, by provider and result',
      labelNames: ['provider', 'result'],
      registers,
    });
    this.attemptSeconds = new Histogram({
      name: 'webhook_inbox_processing_duration_seconds',
      help: 'Duration of one processing attempt',
      buckets: LATENCY_BUCKETS,
      ...perProvider,
    });
    this.retries = new Counter({ name: 'webhook_inbox_processing_retries_total', help: 'Processing attempts after the first for the same event', ...perProvider });
    this.latencySeconds = new Histogram({
      name: 'webhook_inbox_event_latency_seconds',
      help: 'Time from receipt to processed, retries included',
      buckets: LATENCY_BUCKETS,
      ...perProvider,
    });
    this.takeovers = new Counter({ name: 'webhook_inbox_lease_takeovers_total', help: 'Events claimed after the previous lease expired', ...perProvider });
    this.staleTransitions = new Counter({
      name: 'webhook_inbox_stale_transitions_total',
      help: 'Payment events ignored because the payment was already in a later state, by that state',
      labelNames: ['provider', 'state'],
      registers,
    });
    this.yieldSeconds = new Counter({
      name: 'webhook_inbox_workers_yield_seconds_total',
      help: "Seconds the workers' thread held processing back because the request thread was busy (WORKER_YIELD_ELU)",
      registers,
    });

    this.signInRefusals = new Counter({
      name: 'webhook_inbox_admin_sign_in_failures_total',
      help: 'Tokens /admin refused, by how they came (form: the sign-in page, bearer: the API) and why (unknown_token, rate_limited)',
      labelNames: ['via', 'reason'],
      registers,
    });

    const cached = new CachedStats(options.stats, options);
    const gauge = (name: string, help: string, read: (stats: PipelineStats) => number) =>
      new Gauge({
        name,
        help,
        registers,
        async collect() {
          const stats = await cached.get();
          if (stats) this.set(read(stats));
        },
      });
    const ageSeconds = (since: Date | null) => (since ? Math.max(0, (options.clock.now().getTime() - since.getTime()) / 1000) : 0);
    gauge('webhook_inbox_events_due', 'Events a worker should take now (new, retry due, lease expired)', (s) => s.due);
    gauge('webhook_inbox_oldest_pending_event_age_seconds', 'Age of the oldest event not processed yet (given-up events excluded)', (s) => ageSeconds(s.oldestPendingAt));
    gauge('webhook_inbox_events_stuck', 'Events in processing whose lease expired, waiting for a takeover', (s) => s.stuck);
    gauge('webhook_inbox_events_failed', 'Failed events with no automatic retry left', (s) => s.failed);
    if (options.outboxStats) {
      const outbox = new CachedStats(options.outboxStats, options);
      new Gauge({
        name: 'webhook_inbox_outbox_messages',
        help: 'Outbox rows (receipts, fulfilment requests) by status; failed: no automatic retry left, skipped: no transport configured',
        labelNames: ['status'],
        registers,
        async collect() {
          const counts = await outbox.get();
          if (counts) for (const [status, n] of Object.entries(counts)) this.set({ status }, n);
        },
      });
    }

    // Every series exists from the start at 0, so rate() and alerts see the first increment.
    for (const via of ADMIN_SIGN_IN_VIAS) for (const reason of ADMIN_SIGN_IN_REFUSALS) this.signInRefusals.inc({ via, reason }, 0);
    for (const provider of PROVIDER_NAMES) {
      for (const result of DELIVERY_RESULTS) this.deliveries.inc({ provider, result }, 0);
      for (const result of ATTEMPT_RESULTS) this.attempts.inc({ provider, result }, 0);
      this.retries.inc({ provider }, 0);
      this.takeovers.inc({ provider }, 0);
    }
  }

  deliveryAnswered(provider: string, result: DeliveryResult, seconds: number): void {
    // The provider comes from the URL: an unknown one must not create a series per path an attacker tries.
    const label = isProviderName(provider) ? provider : 'unknown';
    this.deliveries.inc({ provider: label, result });
    if (result === 'accepted' || result === 'duplicate') this.ackSeconds.observe({ provider: label }, seconds);
  }

  leaseTakenOver(provider: string): void {
    this.takeovers.inc({ provider });
  }

  attemptFinished({ provider, result, attempt, seconds }: { provider: string; result: AttemptResult; attempt: number; seconds: number }): void {
    this.attempts.inc({ provider, result });
    this.attemptSeconds.observe({ provider }, seconds);
    if (attempt > 1) this.retries.inc({ provider });
  }

  eventProcessed({ provider, staleState, latencySeconds }: { provider: string; staleState?: PaymentState; latencySeconds: number }): void {
    this.latencySeconds.observe({ provider }, latencySeconds);
    if (staleState) this.staleTransitions.inc({ provider, state: staleState });
  }

  workersYielded(seconds: number): void {
    this.yieldSeconds.inc(seconds);
  }

  adminSignInRefused(via: AdminSignInVia, reason: AdminSignInRefusal): void {
    this.signInRefusals.inc({ via, reason });
  }

  async exposition(): Promise<{ contentType: string; text: string }> {
    const [process, inbox] = await Promise.all([processMetrics().metrics(), this.registry.metrics()]);
    return { contentType: this.registry.contentType, text: `${process}\n${inbox}` };
  }
}

/**
 * The store counts behind the gauges: one query for all of them, reused for STATS_MAX_AGE_MS so that
 * several scrapers (or a fast one) cost the database little. A failed read keeps the last values and
 * is not retried before the same delay.
 */
class CachedStats<T> {
  private value: T | null = null;
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<T | null> | null = null;

  constructor(
    private readonly read: () => Promise<T>,
    private readonly options: Pick<PrometheusMetricsOptions, 'clock' | 'logger'>,
  ) {}

  get(): Promise<T | null> {
    if (this.reading) return this.reading;
    if (this.options.clock.now().getTime() - this.readAt < STATS_MAX_AGE_MS) return Promise.resolve(this.value);
    this.reading = this.read()
      .then(
        (stats) => (this.value = stats),
        (error: unknown) => {
          this.options.logger.warn({ err: error }, 'metrics: could not read pipeline counts from the store; keeping the last values');
          return this.value;
        },
      )
      .finally(() => {
        this.readAt = this.options.clock.now().getTime();
        this.reading = null;
      });
    return this.reading;
  }
}
