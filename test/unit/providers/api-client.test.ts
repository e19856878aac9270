import assert from 'node:assert/strict';
import { test } from 'node:test';
import { retryAfterMs } from '../../../src/providers/api-client.js';
import { stripeToCanonical, STRIPE_PAYMENT_EVENT_TYPES } from '../../../src/providers/stripe/normalize.js';

test('Retry-After in seconds or as an HTTP date; anything else waits like a 5xx', () => {
  const now = Date.parse('2026-12-03T04:00:00Z');
  assert.equal(retryAfterMs('3', now), 3000);
  assert.equal(retryAfterMs(' 120 ', now), 120_000);
  assert.equal(retryAfterMs('Thu, 03 Dec 2026 04:00:30 GMT', now), 30_000);
  assert.equal(retryAfterMs('Thu, 03 Dec 2026 03:00:00 GMT', now), 0, 'a date passed waits nothing');
  assert.equal(retryAfterMs('soon', now), 0);
  assert.equal(retryAfterMs(null, now), 0);
});

test('every Stripe event type reconcile asks for means something for a payment', () => {
  for (const type of STRIPE_PAYMENT_EVENT_TYPES) {
    const object = { id: 'pi_1', object: 'payment_intent', payment_intent: 'pi_1', captured: true, refunded: true, payment_status: 'paid' };
    const canonical = stripeToCanonical({ eventType: type, payload: { data: { object } } });
    assert.equal(canonical.kind, 'payment', `${type}: ${canonical.kind === 'ignored' ? canonical.reason : ''}`);
  }
});
