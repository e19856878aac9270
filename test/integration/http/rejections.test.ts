import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { createTestDatabase, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness } from '../../support/harness.js';
import { payuDelivery, payuSuccessFields, razorpayDelivery, stripeDelivery, stripePaymentEvent, type Delivery } from '../../support/signing.js';

const validStripe = () => stripeDelivery(stripePaymentEvent('evt_valid_after_abuse', 'payment_intent.succeeded', 'pi_valid_after_abuse'));
const without = (delivery: Delivery, header: string): Delivery => ({
  ...delivery,
  headers: Object.fromEntries(Object.entries(delivery.headers).filter(([name]) => name !== header)),
});
const payuFields = payuSuccessFields('T7000001');

/** Each case: a request that must be refused with `status` and `error`, writing nothing at all. */
const CASES: Array<{ name: string; status: number; error: string; request: () => Delivery & { path?: string } }> = [
  {
    name: 'Stripe: wrong secret',
    status: 401,
    error: 'invalid_signature',
    request: () => stripeDelivery(stripePaymentEvent('evt_forged', 'payment_intent.succeeded', 'pi_forged'), { secret: 'whsec_attacker' }),
  },
  {
    name: 'Stripe: stale timestamp (301 s)',
    status: 401,
    error: 'invalid_signature',
    request: () => stripeDelivery(stripePaymentEvent('evt_stale', 'payment_intent.succeeded', 'pi_stale'), { timestamp: Math.floor(Date.now() / 1000) - 301 }),
  },
  { name: 'Stripe: missing Stripe-Signature', status: 401, error: 'invalid_signature', request: () => without(validStripe(), 'stripe-signature') },
  {
    name: 'Stripe: garbage signature header',
    status: 401,
    error: 'invalid_signature',
    request: () => ({ ...validStripe(), headers: { 'content-type': 'application/json', 'stripe-signature': 'nonsense' } }),
  },
  { name: 'Stripe: body tampered after signing', status: 401, error: 'invalid_signature', request: () => ({ ...validStripe(), body: validStripe().body.replace('4900', '1') }) },
  { name: 'Stripe: signed malformed JSON', status: 400, error: 'malformed_body', request: () => stripeDelivery('{"id":"evt_broken",') },
  { name: 'Stripe: signed JSON array', status: 400, error: 'malformed_body', request: () => stripeDelivery('[1,2,3]') },
  { name: 'Stripe: signed event without id', status: 400, error: 'missing_event_id', request: () => stripeDelivery({ type: 'payment_intent.succeeded', data: { object: {} } }) },
  { name: 'Stripe: empty body', status: 401, error: 'invalid_signature', request: () => ({ provider: 'stripe', headers: {}, body: '' }) },
  {
    name: 'Razorpay: missing signature',
    status: 401,
    error: 'invalid_signature',
    request: () => without(razorpayDelivery({ event: 'payment.captured' }, 'rzp_evt_1'), 'x-razorpay-signature'),
  },
  {
    name: 'Razorpay: wrong secret',
    status: 401,
    error: 'invalid_signature',
    request: () => razorpayDelivery({ event: 'payment.captured' }, 'rzp_evt_2', { secret: 'not-the-secret' }),
  },
  {
    name: 'Razorpay: signed but no X-Razorpay-Event-Id',
    status: 400,
    error: 'missing_event_id',
    request: () => without(razorpayDelivery({ event: 'payment.captured' }, 'rzp_evt_3'), 'x-razorpay-event-id'),
  },
  { name: 'Razorpay: signed malformed JSON', status: 400, error: 'malformed_body', request: () => razorpayDelivery('{"event":', 'rzp_evt_4') },
  {
    name: 'PayU: hash over other values',
    status: 401,
    error: 'invalid_signature',
    request: () => ({ ...payuDelivery(payuFields), body: payuDelivery(payuFields).body.replace('99.00', '1.00') }),
  },
  {
    name: 'PayU: no hash field',
    status: 401,
    error: 'invalid_signature',
    request: () => ({ provider: 'payu', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(payuFields).toString() }),
  },
  { name: 'PayU: text/plain body', status: 415, error: 'unsupported_media_type', request: () => ({ ...payuDelivery(payuFields), headers: { 'content-type': 'text/plain' } }) },
  {
    name: 'PayU: malformed JSON',
    status: 400,
    error: 'malformed_body',
    request: () => ({ provider: 'payu', headers: { 'content-type': 'application/json' }, body: '{"mihpayid":' }),
  },
  {
    name: 'PayU: form body that is not UTF-8',
    status: 400,
    error: 'malformed_body',
    request: () => ({ provider: 'payu', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: Buffer.from([0x6b, 0x65, 0x79, 0x3d, 0xff, 0xfe]) }),
  },
  { name: 'PayU: signed but no txnid', status: 400, error: 'missing_event_id', request: () => payuDelivery({ ...payuFields, txnid: '  ' }) },
  {
    name: 'oversized body (2 MiB)',
    status: 413,
    error: 'payload_too_large',
    request: () => ({ ...validStripe(), body: `{"id":"evt_big","pad":"${'x'.repeat(2 * 1024 * 1024)}"}` }),
  },
  { name: 'unknown provider', status: 404, error: 'unknown_provider', request: () => ({ ...validStripe(), path: '/webhooks/paypal' }) },
];

for (const backend of STORE_BACKENDS) {
  const databases = { rejections: await createTestDatabase(backend), unconfigured: await createTestDatabase(backend) };

  describe(`rejected deliveries write nothing and do not disturb the server (${backend})`, { skip: 'skip' in databases.rejections && databases.rejections.skip }, () => {
    let db: TestDatabase;
    let harness: Harness;
    before(async () => {
      db = databases.rejections as TestDatabase;
      harness = await Harness.start(db.url);
    });
    after(async () => {
      await harness?.close();
      await db?.drop();
    });

    for (const { name, status, error, request } of CASES) {
      test(`${name} -> ${status}`, async () => {
        const delivery = request();
        const response = await harness.post(delivery, delivery.path);
        assert.equal(response.status, status, JSON.stringify(response.body));
        assert.equal(response.body.error, error);
        assert.equal(typeof response.body.message, 'string');
      });
    }

    test('wrong method -> 405 with Allow: POST', async () => {
      const response = await fetch(`${harness.url}/webhooks/stripe`, { method: 'GET' });
      assert.equal(response.status, 405);
      assert.equal(response.headers.get('allow'), 'POST');
      assert.equal((await fetch(`${harness.url}/webhooks/paypal`, { method: 'PUT' })).status, 404);
    });

    test('after all of the above: not a single row anywhere, and a valid delivery still works', async () => {
      assert.deepEqual(await harness.allCounts(), { webhook_events: 0, webhook_event_bodies: 0, payments: 0, orders: 0, enrollments: 0, outbox: 0 });
      const response = await harness.post(validStripe());
      assert.equal(response.status, 200);
      await harness.waitUntilProcessed(1);
    });
  });

  describe(`a provider without secrets fails closed (${backend})`, { skip: 'skip' in databases.unconfigured && databases.unconfigured.skip }, () => {
    let db: TestDatabase;
    let harness: Harness;
    const logLines: Array<{ level: number; msg: string }> = [];
    before(async () => {
      db = databases.unconfigured as TestDatabase;
      const logger = pino({ level: 'info' }, { write: (line: string) => logLines.push(JSON.parse(line) as { level: number; msg: string }) });
      harness = await Harness.start(db.url, { RAZORPAY_WEBHOOK_SECRET: '', PAYU_MERCHANT_KEY: '', PAYU_MERCHANT_SALT: '' }, { logger });
    });
    after(async () => {
      await harness?.close();
      await db?.drop();
    });

    test('the server says at start which providers are not configured', () => {
      const warnings = logLines.filter((line) => line.level === 40).map((line) => line.msg);
      assert.ok(
        warnings.some((msg) => msg.includes('razorpay is not configured (set RAZORPAY_WEBHOOK_SECRET)')),
        warnings.join('\n'),
      );
      assert.ok(warnings.some((msg) => msg.includes('payu is not configured')));
      assert.ok(!warnings.some((msg) => msg.includes('stripe is not configured')));
    });

    test('unconfigured Razorpay and PayU answer 503 naming the variables; Stripe still works', async () => {
      const razorpay = await harness.post(razorpayDelivery({ event: 'payment.captured' }, 'rzp_evt_unconfigured'));
      assert.equal(razorpay.status, 503);
      assert.equal(razorpay.body.error, 'provider_not_configured');
      assert.match(String(razorpay.body.message), /RAZORPAY_WEBHOOK_SECRET/);
      const payu = await harness.post(payuDelivery(payuFields));
      assert.equal(payu.status, 503);
      assert.match(String(payu.body.message), /PAYU_MERCHANT_KEY and PAYU_MERCHANT_SALT/);
      assert.equal(await harness.countRows('webhook_events'), 0);
      assert.equal((await harness.post(validStripe())).status, 200);
    });
  });
}

describe('an unreachable database', () => {
  const unreachable = {
    // Port 1 refuses connections.
    mysql: 'mysql://root@127.0.0.1:1/wi_unreachable',
    postgres: 'postgres://postgres@127.0.0.1:1/wi_unreachable',
    // A path below a regular file can never be opened.
    sqlite: `sqlite:${import.meta.filename}/inbox.db`,
  };
  for (const backend of STORE_BACKENDS) {
    test(`answers 503 store_unavailable with Retry-After, fast, so the provider retries (${backend})`, async () => {
      // The insert cannot commit, so the delivery must not be acknowledged.
      const harness = await Harness.start(unreachable[backend], { MIGRATE_ON_START: 'false' });
      try {
        const started = performance.now();
        const response = await fetch(`${harness.url}/webhooks/stripe`, { method: 'POST', headers: validStripe().headers, body: validStripe().body });
        assert.equal(response.status, 503);
        assert.equal(response.headers.get('retry-after'), '5');
        assert.equal(((await response.json()) as { error: string }).error, 'store_unavailable');
        assert.ok(performance.now() - started < 5000, 'answered without hanging');
      } finally {
        await harness.close();
      }
    });
  }
});
