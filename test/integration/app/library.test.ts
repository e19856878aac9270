import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Fastify, { type FastifyInstance } from 'fastify';
import { coursePlatform } from '../../../src/course-platform/index.js';
import { answerDelivery, createInbox, installErrorHandling, PermanentError, webhookRoutes, type Inbox, type OutboxTransports, type PaymentHandlers } from '../../../src/index.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { testConfig, waitFor } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const databases = await createTestDatabases();

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`embedding the inbox in another fastify service (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let inbox: Inbox;
    let host: FastifyInstance;

    // The host's own business: a CRM update per captured payment, next to the reference effects,
    // delivered by the host's own outbox transport; and a course that cannot be sold (a permanent failure).
    const handlers: PaymentHandlers = {
      captured: [
        async ({ payment }) => {
          if (payment.metadata.course_id === 'retired_course') throw new PermanentError('course retired');
        },
        async ({ tx, payment, now }) => {
          await tx
            .insertInto('outbox')
            .orIgnore()
            .values({
              idempotency_key: `crm:${payment.provider}:${payment.payment_id}`,
              kind: 'crm_update',
              payload: '{}',
              status: 'pending',
              attempts: 0,
              next_attempt_at: now,
              created_at: now,
            })
            .execute();
        },
      ],
    };
    const crmKeys: string[] = [];
    const transports: OutboxTransports = {
      crm_update: {
        async deliver(message) {
          crmKeys.push(message.idempotencyKey);
          return { status: 'sent', outcome: 'crm updated' };
        },
      },
    };

    before(async () => {
      db = database as TestDatabase;
      const config = testConfig(db.url);
      inbox = createInbox(config, { domains: [coursePlatform], handlers, transports });
      await inbox.store.migrate();
      inbox.start();
      host = Fastify();
      installErrorHandling(host);
      host.post('/echo', async (request) => request.body);
      await host.register(webhookRoutes, { prefix: '/payments', inbox, bodyLimitBytes: config.bodyLimitBytes });
    });
    after(async () => {
      await host?.close();
      await inbox?.stop(1000);
      await db?.drop();
    });

    async function deliver(eventId: string, paymentId: string, courseId: string) {
      const delivery = stripeDelivery(stripePaymentEvent(eventId, 'payment_intent.succeeded', paymentId, { courseId }));
      return host.inject({ method: 'POST', url: '/payments/webhooks/stripe', headers: delivery.headers, payload: delivery.body });
    }

    async function eventProcessedOrFailed(eventId: string) {
      const finished = async () => {
        const state = await inbox.store.findEvent('stripe', eventId);
        return state?.status === 'processed' || state?.status === 'failed' ? state : null;
      };
      await waitFor(`${eventId} processed or failed`, async () => (await finished()) !== null);
      return (await finished())!;
    }

    test('routes mount under a prefix and run the host handlers in the processing transaction', async () => {
      const response = await deliver('evt_lib_1', 'pi_lib_1', 'course_lib');
      assert.equal(response.statusCode, 200);
      assert.equal((await eventProcessedOrFailed('evt_lib_1')).status, 'processed');
      const keys = await inbox.database.selectFrom('outbox').select('idempotency_key').where('idempotency_key', 'like', '%pi_lib_1').orderBy('idempotency_key').execute();
      assert.deepEqual(
        keys.map((k) => k.idempotency_key),
        ['crm:stripe:pi_lib_1', 'fulfilment:stripe:pi_lib_1', 'receipt:stripe:pi_lib_1'],
      );
      await waitFor('the host transport delivered its row', () => crmKeys.length > 0);
      assert.deepEqual(crmKeys, ['crm:stripe:pi_lib_1']);
      await waitFor(
        'the CRM row marked sent',
        async () => (await inbox.database.selectFrom('outbox').select('status').where('idempotency_key', '=', 'crm:stripe:pi_lib_1').executeTakeFirstOrThrow()).status === 'sent',
      );
    });

    test('a PermanentError fails the event without retry and rolls back every effect', async () => {
      assert.equal((await deliver('evt_lib_2', 'pi_lib_2', 'retired_course')).statusCode, 200);
      const state = await eventProcessedOrFailed('evt_lib_2');
      assert.equal(state.status, 'failed');
      assert.equal(state.nextAttemptAt, null, 'no automatic retry');
      assert.match(state.lastError ?? '', /course retired/);
      const payments = await inbox.database.selectFrom('payments').select('id').where('payment_id', '=', 'pi_lib_2').execute();
      assert.equal(payments.length, 0, 'the payment update rolled back with the failure');
    });

    test('answerDelivery answers a raw delivery for any other server: 200, or the status and code of the refusal', async () => {
      const delivery = stripeDelivery(stripePaymentEvent('evt_lib_answer', 'payment_intent.succeeded', 'pi_lib_answer', { courseId: 'course_lib' }));
      const received = await answerDelivery(inbox, 'stripe', { headers: delivery.headers, body: Buffer.from(delivery.body) });
      assert.deepEqual(received, { status: 200, headers: {}, body: { received: true, outcome: 'recorded', provider: 'stripe', eventId: 'evt_lib_answer' } });
      const again = await answerDelivery(inbox, 'stripe', { headers: delivery.headers, body: Buffer.from(delivery.body) });
      assert.equal(again.body.outcome, 'duplicate');
      const forged = await answerDelivery(inbox, 'stripe', { headers: { ...delivery.headers, 'stripe-signature': 't=1,v1=00' }, body: Buffer.from(delivery.body) });
      assert.deepEqual([forged.status, forged.body.error], [401, 'invalid_signature']);
      const unknown = await answerDelivery(inbox, 'paypal', { headers: {}, body: Buffer.alloc(0) });
      assert.deepEqual([unknown.status, unknown.body.error], [404, 'unknown_provider']);
    });

    test("the host's own routes keep their JSON parsing", async () => {
      const response = await host.inject({ method: 'POST', url: '/echo', payload: { hello: 'world' } });
      assert.deepEqual(response.json(), { hello: 'world' });
    });
  });
}
