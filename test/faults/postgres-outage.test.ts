import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { migrateStore } from '../../src/app.js';
import { Harness, serviceInbox, testConfig, waitFor } from '../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../support/signing.js';
import { PrivatePostgres } from '../support/services.js';

const postgres = await PrivatePostgres.start();

const payment = (n: number) => stripeDelivery(stripePaymentEvent(`evt_pg_outage_${n}`, 'payment_intent.succeeded', `pi_pg_outage_${n}`, { userId: `u${n}`, courseId: 'c_pg' }));

describe('PostgreSQL stopped and killed under a running service (private server)', { skip: 'skip' in postgres && postgres.skip }, () => {
  let server: PrivatePostgres;
  let harness: Harness;

  before(async () => {
    server = postgres as PrivatePostgres;
    // The database does not exist yet: the service creates it at start.
    harness = await Harness.start(`${server.url}/webhook_inbox`);
  });
  after(async () => {
    await harness?.close();
    await server?.destroy();
  });

  test('a wrong password fails at start naming DATABASE_URL, the password masked', async () => {
    const url = `postgres://postgres:not-the-password@127.0.0.1:${server.port}/webhook_inbox`;
    const inbox = serviceInbox(testConfig(url));
    try {
      await assert.rejects(migrateStore(inbox.store, url), (error: Error) => {
        assert.match(
          error.message,
          /^cannot use DATABASE_URL postgres:\/\/postgres:…\(masked\)@127\.0\.0\.1:\d+\/webhook_inbox: .*password authentication failed for user "postgres"/,
        );
        assert.ok(!error.message.includes('not-the-password'), error.message);
        return true;
      });
    } finally {
      await inbox.stop(0);
    }
  });

  for (const [how, down] of [
    ['stopped (fast shutdown)', () => server.stopServer()],
    ['killed (a crash)', () => server.kill()],
  ] as const) {
    test(`${how}: 503 store_unavailable while down, then acknowledged and processed again without a restart`, async () => {
      const base = how.startsWith('stopped') ? 0 : 100;
      const { webhook_events: before } = await harness.allCounts();
      for (let n = base; n < base + 5; n++) assert.equal((await harness.post(payment(n))).status, 200);
      await harness.waitUntilProcessed(before + 5, 30_000);

      await down();
      for (let n = base + 5; n < base + 10; n++) {
        const answer = await harness.post(payment(n));
        assert.deepEqual([answer.status, answer.body.error], [503, 'store_unavailable'], JSON.stringify(answer.body));
      }

      await server.startServer();
      // The pool's connections died with the server: the first deliveries after the start may still meet one.
      for (let n = base + 5; n < base + 10; n++) await waitFor(`delivery ${n} acknowledged`, async () => (await harness.post(payment(n))).status === 200, 30_000);
      await harness.waitUntilProcessed(before + 10, 30_000);
      const counts = await harness.allCounts();
      assert.deepEqual([counts.webhook_events, counts.payments, counts.orders, counts.enrollments], [before + 10, before + 10, before + 10, before + 10], 'one effect per payment');
    });
  }
});
