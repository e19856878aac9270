import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createInbox } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/load.js';
import { coursePlatform } from '../../../src/course-platform/index.js';
import { createTestDatabase, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness } from '../../support/harness.js';
import { payuDelivery, stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

/**
 * The course platform as a domain like any other: it reads the buyer from the payment's metadata
 * under the fields of its own settings, describes its rows for the operator's screens, and erases a
 * person from them.
 */
const databases = await Promise.all(STORE_BACKENDS.map(async (backend) => ({ backend, database: await createTestDatabase(backend) })));

/** A PayU success callback whose udf fields carry the buyer, and other merchant data around it. */
function payuSuccess(txnid: string, udf: Record<string, string>) {
  return payuDelivery({ mihpayid: `m_${txnid}`, status: 'success', txnid, amount: '499.00', productinfo: 'Course', firstname: 'Asha', email: 'asha@example.com', ...udf });
}

for (const { backend, database } of databases) {
  describe(`the course platform's hooks (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let harness: Harness;
    before(async () => {
      // A merchant whose PayU integration puts the user in udf3 and the course in udf4.
      harness = await Harness.start((database as TestDatabase).url, {
        PROCESSING_MODE: 'inline',
        COURSE_PLATFORM_PAYU_USER_FIELD: 'udf3',
        COURSE_PLATFORM_PAYU_COURSE_FIELD: 'udf4',
      });
    });
    after(async () => {
      await harness?.close();
      await (database as TestDatabase).drop();
    });

    const enrollmentsOf = (userId: string) =>
      harness.courseDb.selectFrom('enrollments').select(['course_id', 'status', 'payment_id']).where('user_id', '=', userId).orderBy('id').execute();

    test("PayU's fields are its settings' to map: the buyer is read from udf3 and udf4, udf1 and udf2 are the merchant's other data", async () => {
      assert.equal((await harness.post(payuSuccess('T_MAP_1', { udf1: 'campaign-7', udf2: 'partner-x', udf3: 'u_mapped', udf4: 'c_mapped' }))).status, 200);
      assert.deepEqual(await enrollmentsOf('u_mapped'), [{ course_id: 'c_mapped', status: 'active', payment_id: 'T_MAP_1' }]);
      assert.deepEqual(await enrollmentsOf('campaign-7'), []);
      const order = await harness.courseDb.selectFrom('orders').select(['user_id', 'course_id']).where('payment_id', '=', 'T_MAP_1').executeTakeFirst();
      assert.deepEqual(order, { user_id: 'u_mapped', course_id: 'c_mapped' });
    });

    test('describePayment: its order and enrollments as titled sections of labelled values, under its name', async () => {
      const sections = await harness.inbox.domains.describePayment(harness.db, { provider: 'payu', paymentId: 'T_MAP_1' });
      assert.deepEqual(
        sections.map(({ domain, title, layout, records }) => ({ domain, title, layout, records: records.length })),
        [
          { domain: 'course-platform', title: 'Order', layout: 'fields', records: 1 },
          { domain: 'course-platform', title: 'Enrollments', layout: 'table', records: 1 },
        ],
      );
      const enrollment = Object.fromEntries(sections[1]!.records[0]!.map((field) => [field.label, field.value]));
      assert.deepEqual([enrollment.User, enrollment.Course, enrollment.Status], ['u_mapped', 'c_mapped', 'active']);
      const none = await harness.inbox.domains.describePayment(harness.db, { provider: 'payu', paymentId: 'T_NEVER' });
      assert.deepEqual(
        none.map((section) => section.records),
        [[], []],
      );
    });

    test('its outbox rows of a payment, and their kinds in words', () => {
      assert.deepEqual(harness.inbox.domains.paymentOutbox([{ provider: 'payu', paymentId: 'T_MAP_1' }]), {
        keys: ['receipt:payu:T_MAP_1', 'fulfilment:payu:T_MAP_1', 'fulfilment-cancel:payu:T_MAP_1'],
      });
      assert.equal(harness.inbox.domains.outboxKinds.fulfilment_cancellation, 'fulfilment cancellation');
    });

    test("erase: a person's enrollments go, whichever payment holds them now; their orders stay for the sale, without them; nobody else's rows change", async () => {
      const buy = (eventId: string, paymentId: string, userId: string, courseId: string) =>
        harness.post(stripeDelivery(stripePaymentEvent(eventId, 'payment_intent.succeeded', paymentId, { userId, courseId })));
      for (const [eventId, paymentId, userId, courseId] of [
        ['evt_erase_1', 'pi_erase_1', 'u_erased', 'c_one'],
        ['evt_erase_2', 'pi_erase_2', 'u_erased', 'c_two'],
        ['evt_erase_3', 'pi_erase_3', 'u_kept', 'c_one'],
      ] as const) {
        assert.equal((await buy(eventId, paymentId, userId, courseId)).status, 200);
      }
      // The person as the payments they made: here the first only; the second is theirs too, by the user its order names.
      await harness.db.transaction().execute((tx) => harness.inbox.domains.erase(tx, { payments: [{ provider: 'stripe', paymentId: 'pi_erase_1' }] }));
      assert.deepEqual(await enrollmentsOf('u_erased'), []);
      assert.deepEqual(await enrollmentsOf('u_kept'), [{ course_id: 'c_one', status: 'active', payment_id: 'pi_erase_3' }]);
      const orders = await harness.courseDb
        .selectFrom('orders')
        .select(['payment_id', 'user_id', 'course_id', 'amount', 'status'])
        .where('payment_id', 'in', ['pi_erase_1', 'pi_erase_2', 'pi_erase_3'])
        .orderBy('payment_id')
        .execute();
      assert.deepEqual(
        orders.map((order) => ({ ...order, amount: Number(order.amount) })),
        [
          { payment_id: 'pi_erase_1', user_id: null, course_id: 'c_one', amount: 4900, status: 'paid' },
          { payment_id: 'pi_erase_2', user_id: null, course_id: 'c_two', amount: 4900, status: 'paid' },
          { payment_id: 'pi_erase_3', user_id: 'u_kept', course_id: 'c_one', amount: 4900, status: 'paid' },
        ],
      );
    });

    test('a domain whose settings loadConfig did not read is refused at once, naming what to do', () => {
      const config = loadConfig({ DATABASE_URL: (database as TestDatabase).url });
      assert.throws(() => createInbox(config, { domains: [coursePlatform] }), /the course-platform domain has settings of its own.*loadConfig\(env, \{ domains \}\)/);
    });
  });
}
