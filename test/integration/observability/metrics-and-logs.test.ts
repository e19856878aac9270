import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { coursePlatform } from '../../../src/course-platform/index.js';
import { PermanentError, type PaymentHandlers } from '../../../src/index.js';
import { createLogger } from '../../../src/observability/logger.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness } from '../../support/harness.js';
import { metricValue } from '../../support/metrics.js';
import { payuDelivery, razorpayDelivery, stripeDelivery, stripePaymentEvent, TEST_SECRETS, type SignedDelivery } from '../../support/signing.js';

const databases = await createTestDatabases();

/** Appears only inside payloads: a log line containing it has logged a payload. */
const PAYLOAD_CANARY = 'PAYLOADCANARY7f3a';

type LogLine = Record<string, unknown> & { level: number; msg: string };

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`metrics and logs of real deliveries (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let harness: Harness;
    const logLines: LogLine[] = [];
    /** Every signature sent, valid or forged: none may reach a log line. */
    const signatures: string[] = [];

    const handlers: PaymentHandlers = {
      captured: [
        async ({ payment }) => {
          if (payment.metadata.course_id === 'c_flaky') throw new Error('fulfilment service down');
          if (payment.metadata.course_id === 'c_retired') throw new PermanentError('course retired');
        },
      ],
    };

    before(async () => {
      db = database as TestDatabase;
      const logger = createLogger('info', { write: (line: string) => void logLines.push(JSON.parse(line) as LogLine) });
      // Retries far in the future: a failed event stays failed while the test looks at it.
      harness = await Harness.start(db.url, { RETRY_BASE_SECONDS: '600', RETRY_MAX_SECONDS: '600' }, { logger, domains: [coursePlatform], handlers });
    });
    after(async () => {
      await harness?.close();
      await db?.drop();
    });

    function stripeEvent(eventId: string, type: string, paymentId: string, courseId = 'c_obs') {
      return stripePaymentEvent(eventId, type, paymentId, { courseId, object: { description: PAYLOAD_CANARY } });
    }

    async function post(delivery: SignedDelivery, headers: Record<string, string> = {}) {
      signatures.push(
        ...Object.entries(delivery.headers)
          .filter(([name]) => name.endsWith('signature'))
          .map(([, value]) => value.replace(/^t=\d+,v1=/, '')),
      );
      signatures.push(...[...delivery.body.matchAll(/hash=([0-9a-f]+)/g)].map((m) => m[1]!));
      const response = await fetch(`${harness.url}/webhooks/${delivery.provider}`, { method: 'POST', headers: { ...delivery.headers, ...headers }, body: delivery.body });
      return { status: response.status, requestId: response.headers.get('x-request-id'), body: (await response.json()) as Record<string, unknown> };
    }

    async function scrape() {
      const response = await fetch(`${harness.url}/metrics`);
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^text\/plain/);
      return response.text();
    }

    /** The change of each named sample between two scrapes. */
    function delta(before: string, after: string, name: string, labels: Record<string, string>): number {
      return (metricValue(after, name, labels) ?? 0) - (metricValue(before, name, labels) ?? 0);
    }

    /**
     * The attempt's commit is visible before its worker records metrics, so "settled" is the worker's
     * log line of the outcome, written after its metrics.
     */
    async function settled(provider: string, eventId: string, status: 'processed' | 'failed') {
      await harness.waitFor(`${eventId} ${status}`, async () => (await harness.inbox.store.findEvent(provider, eventId))?.status === status);
      await harness.waitFor(`${eventId} ${status} logged`, async () => logLines.some((l) => l.eventId === eventId && l.status === status));
    }

    test('a valid delivery, a duplicate, a forged one, a stale event and failed processing each move their metrics', async () => {
      const start = await scrape();
      const deliveries = (result: string) => ['webhook_inbox_deliveries_total', { provider: 'stripe', result }] as const;

      const valid = stripeDelivery(stripeEvent('evt_obs_1', 'payment_intent.succeeded', 'pi_obs_1'));
      assert.equal((await post(valid)).status, 200);
      await settled('stripe', 'evt_obs_1', 'processed');
      const afterValid = await scrape();
      assert.equal(delta(start, afterValid, ...deliveries('accepted')), 1);
      assert.equal(delta(start, afterValid, 'webhook_inbox_ack_duration_seconds_count', { provider: 'stripe' }), 1);
      assert.equal(delta(start, afterValid, 'webhook_inbox_processing_attempts_total', { provider: 'stripe', result: 'processed' }), 1);
      assert.equal(delta(start, afterValid, 'webhook_inbox_event_latency_seconds_count', { provider: 'stripe' }), 1);

      assert.equal((await post(stripeDelivery(stripeEvent('evt_obs_1', 'payment_intent.succeeded', 'pi_obs_1')))).body.outcome, 'duplicate');
      const forged = await post(stripeDelivery(stripeEvent('evt_obs_forged', 'payment_intent.succeeded', 'pi_obs_forged'), { secret: 'whsec_attacker_0123456789' }));
      assert.equal(forged.status, 401);
      assert.equal((await post(stripeDelivery('{"id":"evt_obs_broken",'))).status, 400);
      const afterRefusals = await scrape();
      assert.equal(delta(afterValid, afterRefusals, ...deliveries('duplicate')), 1);
      assert.equal(delta(afterValid, afterRefusals, ...deliveries('invalid_signature')), 1);
      assert.equal(delta(afterValid, afterRefusals, ...deliveries('bad_request')), 1);
      assert.equal(delta(afterValid, afterRefusals, ...deliveries('accepted')), 0);
      assert.equal(delta(afterValid, afterRefusals, 'webhook_inbox_ack_duration_seconds_count', { provider: 'stripe' }), 1, 'the duplicate was acknowledged');
      assert.equal(
        delta(afterValid, afterRefusals, 'webhook_inbox_processing_attempts_total', { provider: 'stripe', result: 'processed' }),
        0,
        'a duplicate is not processed again',
      );

      // A late "created" for a captured payment: recorded, processed, ignored as stale.
      assert.equal((await post(stripeDelivery(stripeEvent('evt_obs_late', 'payment_intent.created', 'pi_obs_1')))).status, 200);
      await settled('stripe', 'evt_obs_late', 'processed');
      const afterStale = await scrape();
      assert.equal(delta(afterRefusals, afterStale, 'webhook_inbox_stale_transitions_total', { provider: 'stripe', state: 'captured' }), 1);

      assert.equal((await post(stripeDelivery(stripeEvent('evt_obs_flaky', 'payment_intent.succeeded', 'pi_obs_flaky', 'c_flaky')))).status, 200);
      assert.equal((await post(stripeDelivery(stripeEvent('evt_obs_retired', 'payment_intent.succeeded', 'pi_obs_retired', 'c_retired')))).status, 200);
      await settled('stripe', 'evt_obs_flaky', 'failed');
      await settled('stripe', 'evt_obs_retired', 'failed');
      harness.clock.advance(6000); // past the cache of the store gauges (retries stay 10 minutes away)
      const afterFailures = await scrape();
      assert.equal(delta(afterStale, afterFailures, 'webhook_inbox_processing_attempts_total', { provider: 'stripe', result: 'retry_scheduled' }), 1);
      assert.equal(delta(afterStale, afterFailures, 'webhook_inbox_processing_attempts_total', { provider: 'stripe', result: 'failed' }), 1);
      assert.equal(metricValue(afterFailures, 'webhook_inbox_events_failed'), 1, 'the permanent failure waits for an operator');
      assert.equal(metricValue(afterFailures, 'webhook_inbox_events_due'), 0, 'the retry is not due yet');
      assert.equal(metricValue(afterFailures, 'webhook_inbox_events_stuck'), 0);
      assert.ok(metricValue(afterFailures, 'webhook_inbox_oldest_pending_event_age_seconds')! >= 6, 'the event awaiting its retry is pending');
    });

    test('an oversized body, refused before the inbox sees it, is counted as bad_request', async () => {
      const before = await scrape();
      const response = await fetch(`${harness.url}/webhooks/razorpay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: 'x'.repeat(2 * 1024 * 1024) });
      assert.equal(response.status, 413);
      assert.equal(delta(before, await scrape(), 'webhook_inbox_deliveries_total', { provider: 'razorpay', result: 'bad_request' }), 1);
    });

    test('request ids: a sane X-Request-Id is kept and sent back, anything else is replaced by a UUID', async () => {
      const kept = await post(razorpayDelivery({ event: 'payment.captured', payload: { note: PAYLOAD_CANARY } }, 'rzp_obs_1'), { 'x-request-id': 'lb-7f3a:42' });
      assert.equal(kept.requestId, 'lb-7f3a:42');
      const replaced = await post(razorpayDelivery({ event: 'payment.captured' }, 'rzp_obs_2'), { 'x-request-id': 'a b\tc' });
      assert.match(replaced.requestId ?? '', /^[0-9a-f-]{36}$/);
      const tooLong = await post(razorpayDelivery({ event: 'payment.captured' }, 'rzp_obs_3'), { 'x-request-id': 'x'.repeat(129) });
      assert.match(tooLong.requestId ?? '', /^[0-9a-f-]{36}$/);
      const line = logLines.find((l) => l.msg === 'delivery acknowledged' && l.eventId === 'rzp_obs_1');
      assert.equal(line?.reqId, 'lb-7f3a:42');
    });

    test('no log line contains a secret, a signature or a payload; each delivery and attempt has its fields', async () => {
      const payu = {
        mihpayid: '8800001',
        status: 'success',
        txnid: 'T8800001',
        amount: '10.00',
        productinfo: PAYLOAD_CANARY,
        firstname: 'Asha',
        email: 'asha@example.com',
        udf1: 'u_obs',
        udf2: 'c_obs',
      };
      assert.equal((await post(payuDelivery(payu))).status, 200);
      const tampered = payuDelivery({ ...payu, mihpayid: '8800002' });
      assert.equal((await post({ ...tampered, body: tampered.body.replace('10.00', '1.00') })).status, 401);
      assert.equal((await post(razorpayDelivery({ event: 'payment.captured', note: PAYLOAD_CANARY }, 'rzp_obs_forged', { secret: 'not-the-secret' }))).status, 401);
      await settled('payu', 'T8800001:success', 'processed');

      assert.ok(logLines.length > 10, `captured ${logLines.length} lines`);
      const forbidden = [...Object.values(TEST_SECRETS), ...signatures, PAYLOAD_CANARY];
      for (const line of logLines) {
        const text = JSON.stringify(line);
        for (const value of forbidden) assert.ok(!text.includes(value), `log line leaks "${value}": ${text}`);
      }

      const deliveryLines = logLines.filter((l) => l.msg === 'delivery acknowledged' || l.msg === 'delivery rejected');
      assert.ok(deliveryLines.length >= 12, `${deliveryLines.length} delivery lines`);
      for (const line of deliveryLines) {
        assert.equal(typeof line.reqId, 'string', JSON.stringify(line));
        assert.equal(typeof line.provider, 'string');
        assert.equal(typeof line.statusCode, 'number');
        assert.equal(typeof line.ackMs, 'number');
        if (line.statusCode === 200) assert.ok(typeof line.eventId === 'string' && ['recorded', 'duplicate'].includes(line.outcome as string), JSON.stringify(line));
        else assert.equal(typeof line.error, 'string', JSON.stringify(line));
      }
      const forgedLine = deliveryLines.find((l) => l.provider === 'razorpay' && l.statusCode === 401);
      assert.equal(forgedLine?.error, 'invalid_signature');

      const attempts = logLines.filter((l) => l.msg.startsWith('event processed') || l.msg.startsWith('event processing failed'));
      assert.ok(attempts.length >= 5, `${attempts.length} attempt lines`);
      for (const line of attempts) {
        for (const field of ['provider', 'eventId', 'eventType', 'attempt', 'status', 'processingMs']) assert.ok(field in line, `${field} in ${JSON.stringify(line)}`);
      }
      assert.ok(attempts.some((l) => l.status === 'processed' && typeof l.latencyMs === 'number' && typeof l.outcome === 'string'));
      assert.ok(attempts.some((l) => l.status === 'failed' && l.error === 'Error: fulfilment service down' && typeof l.retryAt === 'string'));
    });
  });
}
