import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { coursePlatform } from '../../../src/course-platform/course-platform.js';
import type { PaymentHandlers } from '../../../src/domain/applier.js';
import { createTestDatabase, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness, paymentEffects } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const MODES = ['background', 'inline'] as const;
const cases = await Promise.all(STORE_BACKENDS.flatMap((backend) => MODES.map(async (mode) => ({ backend, mode, database: await createTestDatabase(backend) }))));

/** Course-platform handlers that count how often the capture effects run, and can fail on demand. */
function countingHandlers() {
  const counter = { captured: 0, failNext: 0 };
  const handlers: PaymentHandlers = {
    captured: [
      async () => {
        if (counter.failNext > 0) {
          counter.failNext--;
          throw new Error('fulfilment backend down (test)');
        }
        counter.captured++;
      },
    ],
  };
  return { counter, options: { domains: [coursePlatform], handlers } };
}

for (const { backend, mode, database } of cases) {
  describe(`exactly once under concurrent duplicates (${backend}, ${mode} mode, two servers on one database)`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let servers: Harness[];
    const { counter, options } = countingHandlers();

    before(async () => {
      db = database as TestDatabase;
      const env = { PROCESSING_MODE: mode, RETRY_BASE_SECONDS: '600', RETRY_MAX_SECONDS: '600' };
      // Two inboxes with their own worker pools and sweepers: duplicates race for real on the claim.
      servers = [await Harness.start(db.url, env, options), await Harness.start(db.url, env, options)];
    });
    after(async () => {
      for (const server of servers ?? []) await server.close();
      await db?.drop();
    });

    const acceptable = (status: number) => status === 200 || (mode === 'inline' && status === 503);

    test('50 concurrent identical deliveries: one row, one processing, one order, enrollment and receipt', async () => {
      const paymentId = `pi_storm_${mode}`;
      const delivery = stripeDelivery(stripePaymentEvent(`evt_storm_${mode}`, 'payment_intent.succeeded', paymentId, { userId: `u_${mode}`, courseId: 'c_storm' }));
      const started = performance.now();
      const responses = await Promise.all(Array.from({ length: 50 }, (_, i) => servers[i % 2]!.post(delivery)));
      const elapsed = performance.now() - started;

      assert.ok(
        responses.every((r) => acceptable(r.status)),
        JSON.stringify(responses.map((r) => r.status)),
      );
      assert.ok(responses.some((r) => r.status === 200));
      assert.equal(responses.filter((r) => r.body.outcome === 'recorded').length, 1, 'exactly one delivery recorded the event');
      await servers[0]!.waitFor('storm event processed', async () => (await servers[0]!.inbox.store.findEvent('stripe', `evt_storm_${mode}`))?.status === 'processed');

      const state = await servers[0]!.inbox.store.findEvent('stripe', `evt_storm_${mode}`);
      assert.equal(state?.attempts, 1, 'claimed exactly once');
      assert.equal(counter.captured, 1, 'capture effects ran once');
      assert.deepEqual(await paymentEffects(servers[0]!.db, paymentId), { payments: 1, orders: 1, enrollments: 1, receipts: 1 });
      assert.equal(await servers[0]!.countRows('webhook_events'), 1);
      console.log(`${backend} ${mode}: 50 concurrent duplicates answered in ${elapsed.toFixed(0)} ms`);
    });

    test('two different event ids for one payment (payment_intent.succeeded + charge.succeeded): one effect', async () => {
      const paymentId = `pi_two_ids_${mode}`;
      const options = { userId: `u_two_${mode}`, courseId: 'c_two' };
      const deliveries = [
        stripeDelivery(stripePaymentEvent(`evt_pi_${mode}`, 'payment_intent.succeeded', paymentId, options)),
        stripeDelivery(stripePaymentEvent(`evt_ch_${mode}`, 'charge.succeeded', paymentId, options)),
      ];
      const responses = await Promise.all(deliveries.flatMap((d) => [servers[0]!.post(d), servers[1]!.post(d)]));
      assert.ok(responses.every((r) => acceptable(r.status)));
      await servers[0]!.waitFor('both events processed', async () => {
        const states = await Promise.all([`evt_pi_${mode}`, `evt_ch_${mode}`].map((id) => servers[0]!.inbox.store.findEvent('stripe', id)));
        return states.every((s) => s?.status === 'processed');
      });
      assert.deepEqual(await paymentEffects(servers[0]!.db, paymentId), { payments: 1, orders: 1, enrollments: 1, receipts: 1 });
      const outcomes = await servers[0]!.db
        .selectFrom('webhook_events')
        .select('outcome')
        .where('event_id', 'in', [`evt_pi_${mode}`, `evt_ch_${mode}`])
        .execute();
      assert.deepEqual(outcomes.map((o) => o.outcome).sort(), [`applied: payment ${paymentId} captured`, 'ignored: payment already captured']);
    });

    test('a failed event, then two concurrent redeliveries once it is due: processed exactly once', async () => {
      const paymentId = `pi_retry_${mode}`;
      const eventId = `evt_retry_${mode}`;
      const delivery = stripeDelivery(stripePaymentEvent(eventId, 'payment_intent.succeeded', paymentId, { userId: `u_retry_${mode}`, courseId: 'c_retry' }));
      const capturedBefore = counter.captured;
      counter.failNext = 1;

      const first = await servers[0]!.post(delivery);
      assert.equal(first.status, mode === 'inline' ? 503 : 200, 'inline mode asks the provider to retry a failed processing');
      await servers[0]!.waitFor('first attempt failed', async () => (await servers[0]!.inbox.store.findEvent('stripe', eventId))?.status === 'failed');
      const failed = await servers[0]!.inbox.store.findEvent('stripe', eventId);
      assert.equal(failed?.attempts, 1);
      assert.match(failed?.lastError ?? '', /fulfilment backend down/);
      assert.ok(failed.nextAttemptAt! > new Date(Date.now() + 60_000), 'backoff scheduled the retry minutes ahead');
      assert.deepEqual(await paymentEffects(servers[0]!.db, paymentId), { payments: 0, orders: 0, enrollments: 0, receipts: 0 }, 'the failed attempt rolled back');

      for (const server of servers) server.clock.advance(3_600_000);
      // Stripe signs every retry afresh, with the (now later) current time.
      const again = stripeDelivery(stripePaymentEvent(eventId, 'payment_intent.succeeded', paymentId, { userId: `u_retry_${mode}`, courseId: 'c_retry' }), {
        timestamp: Math.floor(servers[0]!.clock.now().getTime() / 1000),
      });
      const responses = await Promise.all([servers[0]!.post(again), servers[1]!.post(again)]);
      assert.ok(
        responses.every((r) => acceptable(r.status)),
        JSON.stringify(responses),
      );
      await servers[0]!.waitFor('retry processed', async () => (await servers[0]!.inbox.store.findEvent('stripe', eventId))?.status === 'processed');

      const done = await servers[0]!.inbox.store.findEvent('stripe', eventId);
      assert.equal(done?.attempts, 2, 'one failed attempt, one successful: no double claim');
      assert.equal(done?.lastError, null);
      assert.equal(counter.captured - capturedBefore, 1);
      assert.deepEqual(await paymentEffects(servers[0]!.db, paymentId), { payments: 1, orders: 1, enrollments: 1, receipts: 1 });
    });
  });
}
