import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import type { ForwardedEvent, PaymentForwardedEvent } from '../../../src/forwarding/forwarded-event.js';
import { paymentDetail } from '../../../src/ops/payment-detail.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { startHttpDownstream, type HttpCall, type HttpDownstream } from '../../support/downstream.js';
import { FORWARD_SECRETS, verifiedForwardedEvent } from '../../support/forwarded.js';
import { Harness } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const databases = await createTestDatabases();
const FORWARD_TIMEOUT_MS = 400;

/** A Stripe event of payment `paymentId`, with the merchant's metadata. */
function stripeEvent(eventId: string, type: string, paymentId: string, metadata: Record<string, string> = { order: `o_${paymentId}` }) {
  return stripeDelivery(stripePaymentEvent(eventId, type, paymentId, { object: { metadata } }));
}

function paymentOf(call: HttpCall): string {
  return String((call.body.data as Record<string, unknown>).payment_id);
}

/**
 * Forwarding on each store, as a team whose service is not in Node runs it: COURSE_PLATFORM=false,
 * FORWARD_URL pointing at its own service (here a recording one on loopback).
 */
for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`forwarding payment transitions to the team's own service (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let receiver: HttpDownstream;
    let redirected: HttpDownstream;
    let harness: Harness;

    before(async () => {
      db = database as TestDatabase;
      receiver = await startHttpDownstream('/webhooks/payments');
      redirected = await startHttpDownstream('/elsewhere');
      harness = await Harness.start(db.url, {
        COURSE_PLATFORM: 'false',
        FORWARD_URL: receiver.url,
        FORWARD_SECRET: FORWARD_SECRETS.join(','),
        FORWARD_TIMEOUT_MS: String(FORWARD_TIMEOUT_MS),
        FORWARD_RAW_EVENTS: 'true',
        OUTBOX_CONCURRENCY: '4',
        RETRY_BASE_SECONDS: '0.05',
        RETRY_MAX_SECONDS: '0.2',
        MAX_ATTEMPTS: '1000',
        SWEEP_INTERVAL_MS: '50',
      });
    });
    after(async () => {
      await harness?.close();
      await receiver?.close();
      await redirected?.close();
      await db?.drop();
    });

    /** Every forwarded row of a payment, final (sent or failed), in the order written. */
    async function forwardRowsFinal(paymentId: string, count: number) {
      await harness.waitFor(
        `${count} forwarded rows of ${paymentId} final`,
        async () => {
          const rows = await harness.db.selectFrom('outbox').select('status').where('ordering_key', '=', `payment:stripe:${paymentId}`).execute();
          return rows.length === count && rows.every((row) => row.status === 'sent' || row.status === 'failed');
        },
        30_000,
      );
      return harness.db.selectFrom('outbox').selectAll().where('ordering_key', '=', `payment:stripe:${paymentId}`).orderBy('id').execute();
    }

    /** What the receiver accepted for one payment, each verified and valid, in arrival order. */
    function received(paymentId: string, types?: Array<ForwardedEvent['type']>): ForwardedEvent[] {
      return receiver.calls
        .filter((call) => paymentOf(call) === paymentId)
        .map((call) => verifiedForwardedEvent(call))
        .filter((event) => types === undefined || types.includes(event.type));
    }

    test('each transition is forwarded once, signed and valid, in payment order with one delivery of a payment in flight; payments go in parallel', async () => {
      // Each delivery takes a while, so that rows pile up and the dispatcher has to choose.
      receiver.script = () => ({ status: 204, delayMs: 60 });
      const payments = ['pi_fw_order_1', 'pi_fw_order_2', 'pi_fw_order_3'];
      const lifecycle = ['payment_intent.created', 'payment_intent.succeeded', 'charge.refunded'];
      for (const [step, type] of lifecycle.entries()) {
        // Each step once per payment, every delivery twice at the same time (a provider's retry).
        const answers = await Promise.all(
          payments.flatMap((paymentId) => {
            const delivery = stripeEvent(`evt_fw_${paymentId}_${step}`, type, paymentId);
            return [harness.post(delivery), harness.post(delivery)];
          }),
        );
        assert.ok(
          answers.every((answer) => answer.status === 200),
          JSON.stringify(answers),
        );
        await harness.waitFor(`step ${step} processed`, async () => (await harness.countRows('webhook_events', 'processed')) === payments.length * (step + 1), 30_000);
      }
      for (const paymentId of payments) {
        // Per event: the raw event, then the transition it caused.
        const rows = await forwardRowsFinal(paymentId, 6);
        assert.ok(
          rows.every((row) => row.status === 'sent'),
          JSON.stringify(rows),
        );
        const events = received(paymentId);
        assert.deepEqual(
          events.map((event) => event.type),
          ['webhook.received', 'payment.created', 'webhook.received', 'payment.captured', 'webhook.received', 'payment.refunded'],
          'in the order the payment went through them',
        );
        assert.equal(new Set(events.map((event) => event.id)).size, 6, 'each once');
        const calls = receiver.calls.filter((call) => paymentOf(call) === paymentId);
        for (const [index, call] of calls.entries()) {
          if (index > 0) assert.ok(call.startedAt >= calls[index - 1]!.answeredAt!, `${paymentId}: a delivery starts only once the one before was answered`);
        }
        const captured = events.find((event) => event.type === 'payment.captured') as PaymentForwardedEvent;
        assert.deepEqual(captured.data, {
          provider: 'stripe',
          payment_id: paymentId,
          status: 'captured',
          previous_status: 'created',
          amount: 4900,
          currency: 'USD',
          customer: { email: 'buyer@example.com', user_id: null },
          metadata: { order: `o_${paymentId}` },
          source_event_ids: [`evt_fw_${paymentId}_1`],
        });
      }
      // Different payments do not wait for each other.
      const overlapping = receiver.calls.some((call, index) =>
        receiver.calls.some((other, j) => j !== index && paymentOf(other) !== paymentOf(call) && other.startedAt < call.answeredAt! && call.startedAt < other.answeredAt!),
      );
      assert.ok(overlapping, 'deliveries of different payments overlap');
    });

    test('a failing delivery is retried under the same webhook-id, re-signed each time, and the next event of its payment waits for it', async () => {
      const paymentId = 'pi_fw_retry';
      let failures = 0;
      receiver.script = (call) => (paymentOf(call) === paymentId && call.body.type === 'payment.created' && failures++ < 3 ? { status: 503, body: { error: 'down' } } : undefined);
      assert.equal((await harness.post(stripeEvent('evt_fw_retry_0', 'payment_intent.created', paymentId))).status, 200);
      await harness.waitFor('the first attempt failed', async () => failures > 0);
      assert.equal((await harness.post(stripeEvent('evt_fw_retry_1', 'payment_intent.succeeded', paymentId))).status, 200);
      await forwardRowsFinal(paymentId, 4);
      const created = receiver.calls.filter((call) => paymentOf(call) === paymentId && call.body.type === 'payment.created');
      assert.equal(created.length, 4, 'three 503s, then the delivery that was accepted');
      assert.equal(new Set(created.map((call) => call.headers['webhook-id'])).size, 1, 'one webhook-id across the retries');
      for (const call of created) verifiedForwardedEvent(call);
      const types = received(paymentId, ['payment.created', 'payment.captured']).map((event) => event.type);
      assert.deepEqual([...new Set(types)], ['payment.created', 'payment.captured'], 'the capture was held back until the creation was delivered');
    });

    test('4xx other than 408, 409 and 429 fails the row with the response; 409 counts as done; 408 and 429 are retried', async () => {
      const answers: Record<string, Array<{ status: number; body?: unknown; headers?: Record<string, string> }>> = {
        pi_fw_400: [{ status: 400, body: { error: 'unknown payment' } }],
        pi_fw_409: [{ status: 409, body: { error: 'seen it' } }],
        pi_fw_408: [{ status: 408 }, { status: 200 }],
        pi_fw_429: [{ status: 429, headers: { 'retry-after': '0' } }, { status: 200 }],
      };
      const seen: Record<string, number> = {};
      receiver.script = (call) => {
        const script = answers[paymentOf(call)];
        if (!script || call.body.type !== 'payment.created') return undefined;
        const index = (seen[paymentOf(call)] = (seen[paymentOf(call)] ?? -1) + 1);
        return script[Math.min(index, script.length - 1)];
      };
      for (const paymentId of Object.keys(answers)) {
        assert.equal((await harness.post(stripeEvent(`evt_${paymentId}`, 'payment_intent.created', paymentId))).status, 200);
      }
      const transition = async (paymentId: string) => (await forwardRowsFinal(paymentId, 2)).find((row) => row.idempotency_key.endsWith(':created'))!;
      const failed = await transition('pi_fw_400');
      assert.equal(failed.status, 'failed');
      assert.equal(failed.last_error, 'HTTP 400: {"error":"unknown payment"}');
      assert.equal(failed.attempts, 1, 'not retried');
      assert.deepEqual([(await transition('pi_fw_409')).status, (await transition('pi_fw_409')).outcome], ['sent', 'already done: HTTP 409']);
      for (const paymentId of ['pi_fw_408', 'pi_fw_429']) {
        const row = await transition(paymentId);
        assert.deepEqual([row.status, row.attempts], ['sent', 2], paymentId);
      }
    });

    test('a target that hangs is cut at FORWARD_TIMEOUT_MS and retried; a redirect is not followed and fails the row', async () => {
      receiver.script = (call) => {
        if (paymentOf(call) === 'pi_fw_hang' && call.body.type === 'payment.created') {
          return receiver.calls.filter((c) => c.key === call.key).length === 1 ? 'hang' : { status: 200 };
        }
        if (paymentOf(call) === 'pi_fw_redirect') return { status: 307, headers: { location: redirected.url } };
        return undefined;
      };
      const started = performance.now();
      assert.equal((await harness.post(stripeEvent('evt_fw_hang', 'payment_intent.created', 'pi_fw_hang'))).status, 200);
      const hung = (await forwardRowsFinal('pi_fw_hang', 2)).find((row) => row.idempotency_key.endsWith(':created'))!;
      assert.deepEqual([hung.status, hung.attempts], ['sent', 2]);
      assert.ok(performance.now() - started >= FORWARD_TIMEOUT_MS, 'the retry came after the timeout');

      assert.equal((await harness.post(stripeEvent('evt_fw_redirect', 'payment_intent.created', 'pi_fw_redirect'))).status, 200);
      const rows = await forwardRowsFinal('pi_fw_redirect', 2);
      for (const row of rows) {
        assert.equal(row.status, 'failed');
        assert.match(row.last_error ?? '', /^HTTP 307.*redirects are not followed/);
      }
      assert.equal(redirected.calls.length, 0, 'nothing reached the redirect target');
    });

    test('a detail completed later is forwarded as payment.updated; an event about no payment only as webhook.received', async () => {
      receiver.script = () => undefined;
      const paymentId = 'pi_fw_late_metadata';
      assert.equal((await harness.post(stripeEvent('evt_fw_late_0', 'payment_intent.succeeded', paymentId, {}))).status, 200);
      // Processed before the next one arrives: in the other order, the first would create the payment with its metadata.
      await harness.waitFor('the capture processed', async () => (await harness.inbox.store.findEvent('stripe', 'evt_fw_late_0'))?.status === 'processed');
      assert.equal((await harness.post(stripeEvent('evt_fw_late_1', 'charge.succeeded', paymentId, { plan: 'pro' }))).status, 200);
      await forwardRowsFinal(paymentId, 4);
      const [captured, updated] = received(paymentId, ['payment.captured', 'payment.updated']) as PaymentForwardedEvent[];
      assert.deepEqual([captured?.type, captured?.data.metadata], ['payment.captured', {}]);
      assert.deepEqual([updated?.type, updated?.data.status, updated?.data.previous_status, updated?.data.metadata], ['payment.updated', 'captured', 'captured', { plan: 'pro' }]);

      const dispute = stripeDelivery({ id: 'evt_fw_dispute', object: 'event', type: 'charge.dispute.created', data: { object: { id: 'dp_1', object: 'dispute' } } });
      assert.equal((await harness.post(dispute)).status, 200);
      await harness.waitFor('the dispute forwarded', async () => receiver.calls.some((call) => (call.body.data as Record<string, unknown>).event_id === 'evt_fw_dispute'));
      const forwarded = verifiedForwardedEvent(receiver.calls.find((call) => (call.body.data as Record<string, unknown>).event_id === 'evt_fw_dispute')!);
      assert.equal(forwarded.type, 'webhook.received');
      assert.deepEqual(forwarded.type === 'webhook.received' && [forwarded.data.payment_id, forwarded.data.event_type], [null, 'charge.dispute.created']);
    });

    test('without the course platform, its tables do not exist', async () => {
      const tables = (await harness.db.introspection.getTables()).map((table) => table.name);
      assert.ok(tables.includes('payments') && tables.includes('outbox'), tables.join(', '));
      assert.ok(!tables.includes('orders') && !tables.includes('enrollments'), tables.join(', '));
      const migrations = await sql<{ name: string }>`select name from schema_migrations order by name`.execute(harness.db);
      assert.ok(!migrations.rows.some((row) => row.name.startsWith('course-platform/')));
    });

    test("payments show lists a payment's forwarded events, and reads no course table where the course platform does not run", async () => {
      const detail = await paymentDetail(harness.db, harness.clock, harness.inbox.domains, 'stripe', 'pi_fw_order_1');
      assert.deepEqual(detail.sections, []);
      assert.deepEqual(
        detail.outbox.map((entry) => [entry.kind, entry.idempotencyKey]),
        [
          ['forward', 'forward:stripe:event:evt_fw_pi_fw_order_1_0'],
          ['forward', 'forward:stripe:pi_fw_order_1:created'],
          ['forward', 'forward:stripe:event:evt_fw_pi_fw_order_1_1'],
          ['forward', 'forward:stripe:pi_fw_order_1:captured'],
          ['forward', 'forward:stripe:event:evt_fw_pi_fw_order_1_2'],
          ['forward', 'forward:stripe:pi_fw_order_1:refunded'],
        ],
      );
    });
  });
}
