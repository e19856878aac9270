import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { PaymentEffect } from '../../../src/course-platform/handlers.js';
import { createTestDatabase, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { payloadJson } from '../../support/fixtures.js';
import { Harness } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

/**
 * The reference business (src/course-platform/) as a merchant meets it: details that come
 * with a later event, and a customer who paid twice for one course.
 */
const databases = await Promise.all(STORE_BACKENDS.map(async (backend) => ({ backend, database: await createTestDatabase(backend) })));

/** Stripe Checkout's own sample, paid, for `paymentIntent`, carrying the customer's metadata and address. */
function checkoutCompleted(eventId: string, paymentIntent: string, userId: string, courseId: string, email: string): object {
  const sample = payloadJson('stripe', 'checkout.session.completed.json') as { data: { object: Record<string, unknown> } };
  const session = {
    ...sample.data.object,
    payment_intent: paymentIntent,
    payment_status: 'paid',
    metadata: { user_id: userId, course_id: courseId },
    customer_details: { ...(sample.data.object.customer_details as object), email },
  };
  return { ...sample, id: eventId, data: { ...sample.data, object: session } };
}

for (const { backend, database } of databases) {
  describe(`course platform (${backend}, inline processing)`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let harness: Harness;
    before(async () => {
      db = database as TestDatabase;
      harness = await Harness.start(db.url, { PROCESSING_MODE: 'inline' });
    });
    after(async () => {
      await harness?.close();
      await db?.drop();
    });

    const orderOf = (paymentId: string) =>
      harness.courseDb.selectFrom('orders').select(['user_id', 'course_id', 'amount', 'currency', 'status']).where('payment_id', '=', paymentId).executeTakeFirst();
    const effectsOf = async (paymentId: string) => {
      const rows = await harness.db
        .selectFrom('outbox')
        .select(['idempotency_key', 'payload'])
        .where('idempotency_key', 'like', `%:stripe:${paymentId}`)
        .orderBy('idempotency_key')
        .execute();
      return rows.map((row) => ({ key: row.idempotency_key, ...(JSON.parse(row.payload) as PaymentEffect) }));
    };
    const enrollmentOf = (userId: string) => harness.courseDb.selectFrom('enrollments').select(['status', 'payment_id']).where('user_id', '=', userId).execute();

    test('a payment captured before its details arrive: the order gets them later, and fulfilment and receipt wait for them', async () => {
      const paymentIntent = 'pi_details_later';
      const bare = stripePaymentEvent('evt_details_pi', 'payment_intent.succeeded', paymentIntent, { object: { metadata: {}, receipt_email: null } });
      assert.equal((await harness.post(stripeDelivery(bare))).status, 200);
      assert.deepEqual(await orderOf(paymentIntent), { user_id: null, course_id: null, amount: 4900, currency: 'USD', status: 'paid' }, 'the paid order exists at once');
      assert.deepEqual(await effectsOf(paymentIntent), [], 'no fulfilment for nobody, no receipt to no address');
      assert.deepEqual(await enrollmentOf('u_details_later'), []);

      const session = stripeDelivery(checkoutCompleted('evt_details_session', paymentIntent, 'u_details_later', 'c_details', 'later@example.com'));
      assert.equal((await harness.post(session)).status, 200);
      assert.equal((await harness.post(session)).status, 200, 'a redelivery changes nothing');

      assert.deepEqual(
        await orderOf(paymentIntent),
        { user_id: 'u_details_later', course_id: 'c_details', amount: 4900, currency: 'USD', status: 'paid' },
        'the order has its details; the amount it had is kept',
      );
      assert.deepEqual(await enrollmentOf('u_details_later'), [{ status: 'active', payment_id: paymentIntent }]);
      const effects = await effectsOf(paymentIntent);
      assert.deepEqual(
        effects.map(({ key, userId, courseId, email }) => ({ key, userId, courseId, email })),
        [
          { key: `fulfilment:stripe:${paymentIntent}`, userId: 'u_details_later', courseId: 'c_details', email: 'later@example.com' },
          { key: `receipt:stripe:${paymentIntent}`, userId: 'u_details_later', courseId: 'c_details', email: 'later@example.com' },
        ],
        'one fulfilment and one receipt, each with the whole payment',
      );
    });

    test('a receipt goes as soon as the address is known, a fulfilment once the buyer and the course are', async () => {
      const paymentIntent = 'pi_address_first';
      const addressOnly = stripePaymentEvent('evt_address_pi', 'payment_intent.succeeded', paymentIntent, { object: { metadata: {} } });
      assert.equal((await harness.post(stripeDelivery(addressOnly))).status, 200);
      assert.deepEqual(
        (await effectsOf(paymentIntent)).map((e) => e.key),
        [`receipt:stripe:${paymentIntent}`],
      );

      const session = checkoutCompleted('evt_address_session', paymentIntent, 'u_address_first', 'c_address', 'buyer@example.com');
      assert.equal((await harness.post(stripeDelivery(session))).status, 200);
      assert.deepEqual(
        (await effectsOf(paymentIntent)).map((e) => e.key),
        [`fulfilment:stripe:${paymentIntent}`, `receipt:stripe:${paymentIntent}`],
      );
      const fulfilment = (await effectsOf(paymentIntent))[0]!;
      assert.equal(fulfilment.userId, 'u_address_first');
      assert.equal(fulfilment.courseId, 'c_address');
    });

    test('an id longer than a key column holds: the event fails for an operator and nothing is stored under a cut key', async () => {
      const longUser = `u_${'x'.repeat(300)}`;
      const delivery = stripeDelivery(stripePaymentEvent('evt_long_user', 'payment_intent.succeeded', 'pi_long_user', { userId: longUser, courseId: 'c_long' }));
      assert.equal((await harness.post(delivery)).status, 200, 'recorded: the provider need not send it again');
      const event = await harness.inbox.store.findEvent('stripe', 'evt_long_user');
      assert.equal(event?.status, 'failed');
      assert.match(event?.lastError ?? '', /userId is longer than 255 characters/);
      assert.equal(event?.nextAttemptAt, null, 'no automatic retry: it would fail the same way');
      assert.equal(await orderOf('pi_long_user'), undefined);
      assert.deepEqual(await harness.courseDb.selectFrom('enrollments').select('user_id').where('course_id', '=', 'c_long').execute(), []);
    });

    test('one course paid twice, one payment refunded: the enrollment passes to the payment that stands; refunding that one too revokes it', async () => {
      const buyer = { userId: 'u_paid_twice', courseId: 'c_twice' };
      for (const paymentIntent of ['pi_twice_1', 'pi_twice_2']) {
        assert.equal((await harness.post(stripeDelivery(stripePaymentEvent(`evt_${paymentIntent}_s`, 'payment_intent.succeeded', paymentIntent, buyer)))).status, 200);
      }
      assert.deepEqual(await enrollmentOf(buyer.userId), [{ status: 'active', payment_id: 'pi_twice_1' }], 'one enrollment, from the first payment');

      assert.equal((await harness.post(stripeDelivery(stripePaymentEvent('evt_pi_twice_1_r', 'charge.refunded', 'pi_twice_1', buyer)))).status, 200);
      assert.equal((await orderOf('pi_twice_1'))?.status, 'refunded');
      assert.equal((await orderOf('pi_twice_2'))?.status, 'paid');
      assert.deepEqual(await enrollmentOf(buyer.userId), [{ status: 'active', payment_id: 'pi_twice_2' }], 'still enrolled, now through the payment that stands');
      assert.ok(
        (await effectsOf('pi_twice_1')).some((e) => e.key === 'fulfilment-cancel:stripe:pi_twice_1'),
        "the refunded payment's fulfilment is cancelled",
      );
      assert.deepEqual(
        (await effectsOf('pi_twice_2')).map((e) => e.key),
        ['fulfilment:stripe:pi_twice_2', 'receipt:stripe:pi_twice_2'],
        'the other is left alone',
      );

      assert.equal((await harness.post(stripeDelivery(stripePaymentEvent('evt_pi_twice_2_r', 'charge.refunded', 'pi_twice_2', buyer)))).status, 200);
      assert.deepEqual(await enrollmentOf(buyer.userId), [{ status: 'revoked', payment_id: 'pi_twice_2' }], 'nothing paid is left');
    });
  });
}
