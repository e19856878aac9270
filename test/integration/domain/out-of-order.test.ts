import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { PaymentState } from '../../../src/model/payment-event.js';
import { createTestDatabase, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness } from '../../support/harness.js';
import { razorpayDelivery, stripeDelivery, stripePaymentEvent, type Delivery } from '../../support/signing.js';

function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [items.slice()];
  return items.flatMap((item, i) => permutations([...items.slice(0, i), ...items.slice(i + 1)]).map((rest) => [item, ...rest]));
}

const STRIPE_LIFECYCLE = ['payment_intent.created', 'payment_intent.amount_capturable_updated', 'payment_intent.succeeded', 'charge.refunded'] as const;
/** The state each of STRIPE_LIFECYCLE reports. */
const STRIPE_STATES: Record<string, PaymentState> = {
  'payment_intent.created': 'created',
  'payment_intent.amount_capturable_updated': 'authorized',
  'payment_intent.succeeded': 'captured',
  'charge.refunded': 'refunded',
};

function stripeLifecycle(paymentId: string, order: readonly string[]): Delivery[] {
  return order.map((type) => stripeDelivery(stripePaymentEvent(`evt_${paymentId}_${type}`, type, paymentId, { userId: `u_${paymentId}`, courseId: 'c_order' })));
}

const RAZORPAY_LIFECYCLE = ['payment.authorized', 'payment.captured', 'refund.processed'] as const;

function razorpayLifecycle(paymentId: string, order: readonly string[]): Delivery[] {
  return order.map((type) => {
    const refunded = type === 'refund.processed';
    const payment = {
      id: paymentId,
      entity: 'payment',
      amount: 50000,
      currency: 'INR',
      status: refunded ? 'refunded' : type.split('.')[1],
      amount_refunded: refunded ? 50000 : 0,
      email: 'buyer@example.com',
      notes: { user_id: `u_${paymentId}`, course_id: 'c_order' },
    };
    const payload = refunded
      ? { refund: { entity: { id: `rfnd_${paymentId}`, payment_id: paymentId, amount: 50000 } }, payment: { entity: payment } }
      : { payment: { entity: payment } };
    return razorpayDelivery({ entity: 'event', event: type, contains: Object.keys(payload), payload, created_at: 1767225600 }, `${paymentId}_${type}`);
  });
}

async function assertRefundedWithoutAccess(harness: Harness, provider: string, paymentId: string, capturedBeforeRefund: boolean) {
  const payment = await harness.db.selectFrom('payments').selectAll().where('provider', '=', provider).where('payment_id', '=', paymentId).executeTakeFirstOrThrow();
  assert.equal(payment.status, 'refunded', paymentId);
  const enrollments = await harness.courseDb.selectFrom('enrollments').selectAll().where('user_id', '=', `u_${paymentId}`).execute();
  assert.equal(enrollments.filter((e) => e.status === 'active').length, 0, `${paymentId}: no active enrollment`);
  const orders = await harness.courseDb.selectFrom('orders').selectAll().where('payment_id', '=', paymentId).execute();
  assert.ok(orders.length <= 1 && orders.every((o) => o.status === 'refunded'), `${paymentId}: any order is marked refunded`);
  if (capturedBeforeRefund) {
    assert.equal(enrollments.length, 1, `${paymentId}: the capture granted access before the refund revoked it`);
    assert.equal(orders.length, 1);
  }
}

for (const backend of STORE_BACKENDS) {
  const databases = { inline: await createTestDatabase(backend), background: await createTestDatabase(backend) };

  describe(`out-of-order delivery, one event at a time (${backend}, inline processing)`, { skip: 'skip' in databases.inline && databases.inline.skip }, () => {
    let db: TestDatabase;
    let harness: Harness;
    before(async () => {
      db = databases.inline as TestDatabase;
      harness = await Harness.start(db.url, { PROCESSING_MODE: 'inline' });
    });
    after(async () => {
      await harness?.close();
      await db?.drop();
    });

    test('all 24 orders of Stripe created/authorized/captured/refunded end refunded, without access', async () => {
      const orders = permutations(STRIPE_LIFECYCLE);
      assert.equal(orders.length, 24);
      for (const [n, order] of orders.entries()) {
        const paymentId = `pi_perm_${n}`;
        for (const delivery of stripeLifecycle(paymentId, order)) assert.equal((await harness.post(delivery)).status, 200);
        await assertRefundedWithoutAccess(harness, 'stripe', paymentId, order.indexOf('payment_intent.succeeded') < order.indexOf('charge.refunded'));
        const outcomes = await harness.db.selectFrom('webhook_events').select(['status', 'outcome']).where('event_id', 'like', `evt_${paymentId}_%`).execute();
        assert.equal(outcomes.length, 4);
        assert.ok(outcomes.every((o) => o.status === 'processed'));
        // Every event after the refund is stale and says so.
        for (const type of order.slice(order.indexOf('charge.refunded') + 1)) {
          const row = await harness.inbox.store.findEvent('stripe', `evt_${paymentId}_${type}`);
          const detail = row?.outcomeDetail;
          assert.ok(detail?.kind === 'stale', `${paymentId} ${type}: stale`);
          assert.deepEqual([detail.state, detail.reported], ['refunded', STRIPE_STATES[type]], `${paymentId} ${type}`);
          assert.match(row?.outcome ?? '', /^ignored: payment already refunded/, `${paymentId} ${type}: in words`);
        }
      }
    });

    test('all 6 orders of Razorpay authorized/captured/refund.processed end refunded, without access', async () => {
      for (const [n, order] of permutations(RAZORPAY_LIFECYCLE).entries()) {
        const paymentId = `pay_perm_${n}`;
        for (const delivery of razorpayLifecycle(paymentId, order)) assert.equal((await harness.post(delivery)).status, 200);
        await assertRefundedWithoutAccess(harness, 'razorpay', paymentId, order.indexOf('payment.captured') < order.indexOf('refund.processed'));
      }
    });

    test('a late authorisation moves a failed payment forward; a failure after capture is ignored', async () => {
      const failedFirst = ['payment_intent.payment_failed', 'payment_intent.amount_capturable_updated', 'payment_intent.succeeded'];
      for (const delivery of stripeLifecycle('pi_late_auth', failedFirst)) assert.equal((await harness.post(delivery)).status, 200);
      const late = await harness.db.selectFrom('payments').select('status').where('payment_id', '=', 'pi_late_auth').executeTakeFirstOrThrow();
      assert.equal(late.status, 'captured');

      for (const delivery of stripeLifecycle('pi_fail_after', ['payment_intent.succeeded', 'payment_intent.payment_failed'])) await harness.post(delivery);
      const after = await harness.db.selectFrom('payments').select('status').where('payment_id', '=', 'pi_fail_after').executeTakeFirstOrThrow();
      assert.equal(after.status, 'captured');
      const stale = await harness.inbox.store.findEvent('stripe', 'evt_pi_fail_after_payment_intent.payment_failed');
      assert.equal(stale?.outcome, 'ignored: payment already captured');
      assert.deepEqual(stale?.outcomeDetail, { kind: 'stale', paymentId: 'pi_fail_after', state: 'captured', reported: 'failed', detailsCompleted: false });
    });
  });

  describe(`out-of-order delivery, all events of a payment at once (${backend}, background workers)`, { skip: 'skip' in databases.background && databases.background.skip }, () => {
    let db: TestDatabase;
    let harness: Harness;
    before(async () => {
      db = databases.background as TestDatabase;
      harness = await Harness.start(db.url, { WORKER_CONCURRENCY: '8' });
    });
    after(async () => {
      await harness?.close();
      await db?.drop();
    });

    test('24 payments, each with its 4 events delivered concurrently in a different order: all refunded', async () => {
      const orders = permutations(STRIPE_LIFECYCLE);
      const deliveries = orders.flatMap((order, n) => stripeLifecycle(`pi_conc_${n}`, order));
      const responses = await Promise.all(deliveries.map((d) => harness.post(d)));
      assert.ok(responses.every((r) => r.status === 200));
      await harness.waitUntilProcessed(deliveries.length, 30_000);
      for (const n of orders.keys()) {
        const payment = await harness.db.selectFrom('payments').select('status').where('payment_id', '=', `pi_conc_${n}`).executeTakeFirstOrThrow();
        assert.equal(payment.status, 'refunded');
        const active = await harness.courseDb.selectFrom('enrollments').select('id').where('user_id', '=', `u_pi_conc_${n}`).where('status', '=', 'active').execute();
        assert.equal(active.length, 0);
      }
      const failed = await harness.countRows('webhook_events', 'failed');
      assert.equal(failed, 0, 'no processing failed (lock conflicts are retried inside the lease)');
    });
  });
}
