import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../../../src/config/load.js';
import { formatDuration, parseDuration, parseTimeReference } from '../../../src/config/duration.js';
import { simulateEvent, SIMULATED_EVENT_TYPES } from '../../../src/ops/simulator/simulated-events.js';
import { signEvent } from '../../../src/ops/simulator/sign.js';
import { ProviderRegistry } from '../../../src/providers/registry.js';
import { payuDelivery, razorpayDelivery, stripeDelivery, TEST_SECRETS } from '../../support/signing.js';

describe('durations and times given to operator commands', () => {
  test('units s m h d w', () => {
    assert.equal(parseDuration('45s'), 45_000);
    assert.equal(parseDuration('30m'), 1_800_000);
    assert.equal(parseDuration('24h'), 86_400_000);
    assert.equal(parseDuration('90d'), 7_776_000_000);
    assert.equal(parseDuration('2w'), 1_209_600_000);
    assert.equal(formatDuration(7_776_000_000), '90d');
    assert.equal(formatDuration(1_800_000), '30m');
  });

  test('bad durations say what is accepted', () => {
    for (const bad of ['', '90', 'd', '1.5h', '-3d', '3 days', '0m']) assert.throws(() => parseDuration(bad), /duration|zero/, bad);
    assert.throws(() => parseDuration('90x'), /"90x" is not a duration; use a whole number and a unit: 45s, 30m, 24h, 90d, 2w/);
  });

  test('a time is a duration ago or a UTC date', () => {
    const now = new Date('2024-05-10T12:00:00Z');
    assert.equal(parseTimeReference('24h', now).toISOString(), '2024-05-09T12:00:00.000Z');
    assert.equal(parseTimeReference('2024-05-01', now).toISOString(), '2024-05-01T00:00:00.000Z');
    assert.equal(parseTimeReference('2024-05-01T06:30:00', now).toISOString(), '2024-05-01T06:30:00.000Z');
    assert.equal(parseTimeReference('2024-05-01T06:30:00+05:30', now).toISOString(), '2024-05-01T01:00:00.000Z');
    assert.throws(() => parseTimeReference('yesterday', now), /neither a duration .* nor a date/);
    assert.throws(() => parseTimeReference('2024-13-45', now), /neither a duration/);
    assert.throws(() => parseTimeReference('2024-02-30', now), /neither a duration/, 'a day the calendar does not have is refused, not read as 1 March');
    assert.throws(() => parseTimeReference('2023-02-29T10:00:00Z', now), /neither a duration/);
    assert.equal(parseTimeReference('2024-02-29', now).toISOString(), '2024-02-29T00:00:00.000Z', 'a leap day is a day');
  });

  test('schedules: a daily stuck check, provider alerts every five minutes, no archiving or reconciling, unless configured', () => {
    const defaults = loadConfig({}).operations;
    assert.deepEqual(defaults, {
      alertWebhookUrl: null,
      stuckCheck: { cron: '0 9 * * *', olderThanMs: 1_800_000, outboxOlderThanMs: 3_600_000 },
      archive: { cron: null, to: null, olderThanMs: 7_776_000_000, keys: [], s3: { endpointUrl: null, forcePathStyle: false, region: 'us-east-1', storageClass: null } },
      reconcile: { apis: { stripe: null, razorpay: null, payu: null }, cron: null, windowMs: 86_400_000, maxPages: 1000, concurrency: 4, payuPendingOlderThanMs: 1_800_000 },
      alerts: { cron: '*/5 * * * *', non2xxForMs: 7_200_000, signatureFailureShare: 0.5, signatureFailureMinCount: 10, providerSilentForMs: null },
    });
    assert.equal(loadConfig({ STUCK_CHECK_CRON: 'off' }).operations.stuckCheck.cron, null);
  });
});

describe('the provider simulator', () => {
  const config = loadConfig({
    STRIPE_WEBHOOK_SECRET: TEST_SECRETS.stripe,
    RAZORPAY_WEBHOOK_SECRET: TEST_SECRETS.razorpay,
    PAYU_MERCHANT_KEY: TEST_SECRETS.payuKey,
    PAYU_MERCHANT_SALT: TEST_SECRETS.payuSalt,
  });
  const registry = new ProviderRegistry(config.providers);
  const now = new Date('2024-05-10T12:00:00Z');

  test("signs exactly as the tests' independent signer does", () => {
    const stripe = simulateEvent('stripe', 'payment_intent.succeeded', {}, now);
    const razorpay = simulateEvent('razorpay', 'payment.captured', {}, now);
    const payu = simulateEvent('payu', 'success', {}, now);
    assert.deepEqual(
      signEvent(stripe, config.providers, { now }),
      stripeDelivery(JSON.stringify(stripe.provider === 'stripe' && stripe.json), { timestamp: now.getTime() / 1000 }),
    );
    assert.deepEqual(signEvent(razorpay, config.providers), razorpayDelivery(JSON.stringify(razorpay.provider === 'razorpay' && razorpay.json), razorpay.eventId));
    assert.deepEqual(signEvent(payu, config.providers), payuDelivery(payu.provider === 'payu' ? payu.fields : {}));
  });

  test('every event type verifies and means what its name says', () => {
    const expected: Record<string, string> = {
      'payment_intent.created': 'created',
      'payment_intent.processing': 'created',
      'payment_intent.amount_capturable_updated': 'authorized',
      'payment_intent.succeeded': 'captured',
      'payment_intent.payment_failed': 'failed',
      'payment_intent.canceled': 'failed',
      'charge.succeeded': 'captured',
      'charge.captured': 'captured',
      'charge.failed': 'failed',
      'charge.refunded': 'refunded',
      'checkout.session.completed': 'captured',
      'checkout.session.async_payment_succeeded': 'captured',
      'checkout.session.async_payment_failed': 'failed',
      'charge.dispute.created': 'ignored',
      'payment.authorized': 'authorized',
      'payment.captured': 'captured',
      'payment.failed': 'failed',
      'order.paid': 'captured',
      'refund.created': 'ignored',
      'refund.processed': 'refunded',
      'payment.dispute.created': 'ignored',
      success: 'captured',
      failure: 'failed',
      pending: 'created',
    };
    for (const provider of ['stripe', 'razorpay', 'payu'] as const) {
      for (const type of SIMULATED_EVENT_TYPES[provider]) {
        const event = simulateEvent(provider, type, { paymentId: provider === 'payu' ? '12345678901' : `pay_${type}`, userId: 'u1', courseId: 'c1' }, now);
        const delivery = signEvent(event, config.providers, { now });
        const verified = registry.verifier(provider).verify({ headers: delivery.headers, body: Buffer.from(delivery.body), receivedAt: now });
        assert.equal(verified.eventId, event.eventId);
        const canonical = registry.toCanonical(provider, { eventType: verified.eventType, payload: JSON.parse(verified.payload) });
        assert.equal(canonical.kind === 'payment' ? canonical.state : 'ignored', expected[type], `${provider} ${type}`);
        // The user and course travel in the metadata field each provider carries them in (PayU's udf1, udf2).
        const [user, course] = provider === 'payu' ? ['udf1', 'udf2'] : ['user_id', 'course_id'];
        if (canonical.kind === 'payment')
          assert.deepEqual([canonical.paymentId, canonical.metadata[user], canonical.metadata[course]], [event.paymentId, 'u1', 'c1'], `${provider} ${type}`);
      }
    }
  });

  test('a forged delivery does not verify; unknown types and unconfigured providers are clear errors', () => {
    const event = simulateEvent('stripe', 'charge.succeeded', {}, now);
    const forged = signEvent(event, config.providers, { now, forged: true });
    assert.throws(() => registry.verifier('stripe').verify({ headers: forged.headers, body: Buffer.from(forged.body), receivedAt: now }), /no v1 signature matches/);
    assert.throws(() => simulateEvent('razorpay', 'payment.exploded'), /unknown razorpay event type "payment.exploded"; known: payment.authorized/);
    assert.throws(() => signEvent(event, { ...config.providers, stripe: null }), /cannot sign stripe events: set STRIPE_WEBHOOK_SECRET/);
  });
});
