import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createInbox, loadConfig, type Inbox } from '../../../src/index.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';
import { waitFor } from '../../support/harness.js';

/**
 * The engine knows payments, not courses: an inbox built from the library's root with no domain
 * makes no table or column of the course platform, on every store, and still keeps every payment's
 * metadata whole for a domain to read.
 */
const databases = await createTestDatabases();

/** A name that is about orders, enrollments or courses (the outbox's ordering key is not). */
const COURSE_NAME = /^orders?$|^order_id$|enrol|course|^user_id$/;

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`an inbox with no domain (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let inbox: Inbox;

    before(async () => {
      inbox = createInbox(loadConfig({ DATABASE_URL: (database as TestDatabase).url, LOG_LEVEL: 'silent', STRIPE_WEBHOOK_SECRET: 'whsec_test_integration_0123456789abcdef' }), {
        domains: [],
      });
      await inbox.store.migrate();
      inbox.start();
    });
    after(async () => {
      await inbox?.stop(1000);
      await (database as TestDatabase).drop();
    });

    test('its migrations create no table or column about orders, enrollments or courses', async () => {
      const tables = await inbox.database.introspection.getTables();
      assert.ok(tables.some((table) => table.name === 'payments'));
      assert.deepEqual(
        tables.filter((table) => COURSE_NAME.test(table.name)).map((table) => table.name),
        [],
      );
      assert.deepEqual(
        tables.flatMap((table) => table.columns.filter((column) => COURSE_NAME.test(column.name)).map((column) => `${table.name}.${column.name}`)),
        [],
      );
    });

    test("a payment keeps the merchant's metadata whole, the user and course among it, and the payer's e-mail", async () => {
      const delivery = stripeDelivery(stripePaymentEvent('evt_nd_1', 'payment_intent.succeeded', 'pi_nd_1', { userId: 'u_nd', courseId: 'c_nd' }));
      const received = await inbox.verifyAndReceive('stripe', { headers: delivery.headers, body: Buffer.from(delivery.body), receivedAt: new Date() });
      assert.equal(received.outcome, 'recorded');
      const payment = () => inbox.database.selectFrom('payments').select(['status', 'email', 'metadata']).where('payment_id', '=', 'pi_nd_1').executeTakeFirst();
      await waitFor('the payment', async () => (await payment()) !== undefined);
      const { status, email, metadata } = (await payment())!;
      assert.deepEqual(
        { status, email, metadata: JSON.parse(metadata ?? 'null') as unknown },
        {
          status: 'captured',
          email: 'buyer@example.com',
          metadata: { user_id: 'u_nd', course_id: 'c_nd' },
        },
      );
      assert.deepEqual(await inbox.database.selectFrom('outbox').select('id').execute(), [], 'no domain, no effect');
    });
  });
}
