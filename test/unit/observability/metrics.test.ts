import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import {
  BadRequestError,
  ConfigError,
  ProcessingPendingError,
  ProviderNotConfiguredError,
  RecordNotStoredError,
  SignatureError,
  StoreUnavailableError,
  UnknownProviderError,
  UnsupportedMediaTypeError,
} from '../../../src/errors.js';
import { deliveryResult } from '../../../src/observability/metrics.js';
import { PrometheusMetrics } from '../../../src/observability/prometheus.js';
import type { PipelineStats } from '../../../src/store/inbox-store.js';
import { TestClock } from '../../support/harness.js';
import { metricValue } from '../../support/metrics.js';

function metricsWithStats(read: () => Promise<PipelineStats>) {
  const clock = new TestClock();
  let reads = 0;
  const metrics = new PrometheusMetrics({ stats: () => (reads++, read()), clock, logger: pino({ level: 'silent' }) });
  const scrape = async () => (await metrics.exposition()).text;
  return { metrics, clock, scrape, reads: () => reads };
}

const STATS: PipelineStats = { due: 3, oldestPendingAt: null, stuck: 1, failed: 2 };

describe('deliveryResult maps each refusal to its result', () => {
  for (const [error, result] of [
    [new SignatureError('x'), 'invalid_signature'],
    [new BadRequestError('x'), 'bad_request'],
    [new UnsupportedMediaTypeError('x'), 'bad_request'],
    [new UnknownProviderError('paypal'), 'bad_request'],
    [new StoreUnavailableError('x'), 'unavailable'],
    [new ProviderNotConfiguredError('payu', ['PAYU_MERCHANT_KEY']), 'unavailable'],
    [new ProcessingPendingError('x'), 'unavailable'],
    [new RecordNotStoredError('x'), 'unavailable'],
    [new ConfigError(['x']), 'error'],
    [new TypeError('bug'), 'error'],
  ] as const) {
    test(`${error.constructor.name} -> ${result}`, () => assert.equal(deliveryResult(error), result));
  }
});

describe('PrometheusMetrics', () => {
  test('counts deliveries; an unknown provider is one "unknown" series, not one per path tried', async () => {
    const { metrics, scrape } = metricsWithStats(async () => STATS);
    metrics.deliveryAnswered('stripe', 'accepted', 0.004);
    metrics.deliveryAnswered('stripe', 'invalid_signature', 0.001);
    metrics.deliveryAnswered('paypal', 'bad_request', 0);
    metrics.deliveryAnswered('x'.repeat(50), 'bad_request', 0);
    const text = await scrape();
    assert.equal(metricValue(text, 'webhook_inbox_deliveries_total', { provider: 'stripe', result: 'accepted' }), 1);
    assert.equal(metricValue(text, 'webhook_inbox_deliveries_total', { provider: 'razorpay', result: 'accepted' }), 0, 'series exist from the start');
    assert.equal(metricValue(text, 'webhook_inbox_deliveries_total', { provider: 'unknown', result: 'bad_request' }), 2);
    assert.ok(!text.includes('paypal'));
    assert.equal(metricValue(text, 'webhook_inbox_ack_duration_seconds_count', { provider: 'stripe' }), 1, 'only answered deliveries time the ack');
    assert.equal(metricValue(text, 'webhook_inbox_ack_duration_seconds_bucket', { provider: 'stripe', le: '0.005' }), 1);
  });

  test('attempts, retries, latency and stale transitions', async () => {
    const { metrics, scrape } = metricsWithStats(async () => STATS);
    metrics.attemptFinished({ provider: 'payu', result: 'retry_scheduled', attempt: 1, seconds: 0.01 });
    metrics.attemptFinished({ provider: 'payu', result: 'processed', attempt: 2, seconds: 0.02 });
    metrics.eventProcessed({ provider: 'payu', latencySeconds: 12 });
    metrics.eventProcessed({ provider: 'payu', staleState: 'captured', latencySeconds: 0.2 });
    metrics.leaseTakenOver('payu');
    const text = await scrape();
    assert.equal(metricValue(text, 'webhook_inbox_processing_attempts_total', { provider: 'payu', result: 'retry_scheduled' }), 1);
    assert.equal(metricValue(text, 'webhook_inbox_processing_attempts_total', { provider: 'payu', result: 'processed' }), 1);
    assert.equal(metricValue(text, 'webhook_inbox_processing_retries_total', { provider: 'payu' }), 1);
    assert.equal(metricValue(text, 'webhook_inbox_event_latency_seconds_count', { provider: 'payu' }), 2);
    assert.equal(metricValue(text, 'webhook_inbox_event_latency_seconds_bucket', { provider: 'payu', le: '10' }), 1);
    assert.equal(metricValue(text, 'webhook_inbox_stale_transitions_total', { provider: 'payu', state: 'captured' }), 1);
    assert.equal(metricValue(text, 'webhook_inbox_lease_takeovers_total', { provider: 'payu' }), 1);
  });

  test('the seconds the workers yielded to the acknowledgements add up, from 0', async () => {
    const { metrics, scrape } = metricsWithStats(async () => STATS);
    assert.equal(metricValue(await scrape(), 'webhook_inbox_workers_yield_seconds_total'), 0);
    metrics.workersYielded(0.25);
    metrics.workersYielded(0.25);
    assert.equal(metricValue(await scrape(), 'webhook_inbox_workers_yield_seconds_total'), 0.5);
  });

  test('the store gauges share one read, cached for 5 s of the clock', async () => {
    const { clock, scrape, reads } = metricsWithStats(async () => ({ ...STATS, oldestPendingAt: new Date(Date.now() - 60_000) }));
    const [first] = await Promise.all([scrape(), scrape(), scrape()]);
    assert.equal(reads(), 1, 'concurrent scrapes and four gauges: one store read');
    assert.equal(metricValue(first, 'webhook_inbox_events_due'), 3);
    assert.equal(metricValue(first, 'webhook_inbox_events_stuck'), 1);
    assert.equal(metricValue(first, 'webhook_inbox_events_failed'), 2);
    const age = metricValue(first, 'webhook_inbox_oldest_pending_event_age_seconds')!;
    assert.ok(age >= 60 && age < 70, String(age));
    clock.advance(4000);
    await scrape();
    assert.equal(reads(), 1);
    clock.advance(1500);
    await scrape();
    assert.equal(reads(), 2);
  });

  test('a failed store read keeps the last values and the scrape still answers', async () => {
    let fail = false;
    const { clock, scrape, reads } = metricsWithStats(async () => {
      if (fail) throw new StoreUnavailableError('database unavailable');
      return STATS;
    });
    await scrape();
    fail = true;
    clock.advance(6000);
    const text = await scrape();
    assert.equal(reads(), 2);
    assert.equal(metricValue(text, 'webhook_inbox_events_due'), 3);
    assert.ok(metricValue(text, 'process_cpu_user_seconds_total')! >= 0, 'process metrics are included');
  });

  test('two instances in one process keep separate counts', async () => {
    const a = metricsWithStats(async () => STATS);
    const b = metricsWithStats(async () => STATS);
    a.metrics.deliveryAnswered('stripe', 'duplicate', 0.001);
    assert.equal(metricValue(await a.scrape(), 'webhook_inbox_deliveries_total', { provider: 'stripe', result: 'duplicate' }), 1);
    assert.equal(metricValue(await b.scrape(), 'webhook_inbox_deliveries_total', { provider: 'stripe', result: 'duplicate' }), 0);
  });
});
