import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import type { CoursePlatformTables } from '../../../src/course-platform/schema.js';
import { openStore } from '../../../src/store/open-store.js';
import { systemClock } from '../../../src/clock.js';
import { exitOf, runCli as run } from '../../support/cli.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { waitFor } from '../../support/harness.js';
import { serve, worker } from '../../support/processes.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const databases = await createTestDatabases();

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`the webhook-inbox command (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    const db = database as TestDatabase;
    after(async () => {
      await db.drop?.();
    });

    test('migrate applies the versioned migrations once', async () => {
      const first = run(['migrate'], { DATABASE_URL: db.url });
      assert.equal(await exitOf(first), 0, first.output());
      assert.match(first.output(), /applied: 0001_webhook_events, 0002_course_platform, 0003_payment_leases/);
      const second = run(['migrate'], { DATABASE_URL: db.url });
      assert.equal(await exitOf(second), 0);
      assert.match(second.output(), /database is up to date/);
    });

    test('serve refuses an invalid configuration, naming each bad variable', async () => {
      const child = run(['serve'], { DATABASE_URL: db.url, PORT: 'eighty', PROCESSING_MODE: 'turbo' });
      assert.equal(await exitOf(child), 2);
      assert.match(child.output(), /PORT must be an integer/);
      assert.match(child.output(), /PROCESSING_MODE must be one of background, inline/);
    });

    test('serve on a port that is taken says which address it could not listen on, and exits 1', async () => {
      const taken = createServer().listen(0, '127.0.0.1');
      await once(taken, 'listening');
      try {
        const { port } = taken.address() as AddressInfo;
        const child = run(['serve'], { DATABASE_URL: db.url, HOST: '127.0.0.1', PORT: String(port) });
        assert.equal(await exitOf(child), 1);
        assert.match(child.output(), new RegExp(`cannot listen on HOST 127\\.0\\.0\\.1, PORT ${port}: .*EADDRINUSE`));
      } finally {
        taken.close();
      }
    });

    test(`serve receives and processes; SIGTERM exits cleanly; a restart does not process again${backend === 'sqlite' ? ' (default store: no DATABASE_URL)' : ''}`, async () => {
      // SQLite runs as the README's quick start does: no DATABASE_URL, so ./data/ in the working directory.
      const cwd = await mkdtemp(join(tmpdir(), 'wi-cli-'));
      const env: Record<string, string> = backend === 'sqlite' ? {} : { DATABASE_URL: db.url };
      const storeUrl = backend === 'sqlite' ? `sqlite:${join(cwd, 'data/webhook-inbox.db')}` : db.url;
      const paymentId = `pi_cli_${backend}`;
      const delivery = stripeDelivery(stripePaymentEvent(`evt_cli_${backend}`, 'payment_intent.succeeded', paymentId, { userId: 'u_cli', courseId: 'c_cli' }));
      const post = (url: string) => fetch(`${url}/webhooks/stripe`, { method: 'POST', headers: delivery.headers, body: delivery.body });

      const first = await serve(env, [], cwd);
      assert.equal((await post(first.url)).status, 200);
      const store = openStore(storeUrl, { poolSize: 1, clock: systemClock });
      try {
        await waitFor('the event processed', async () => (await store.findEvent('stripe', `evt_cli_${backend}`))?.status === 'processed');
        first.child.kill('SIGTERM');
        assert.equal(await exitOf(first.child), 0, first.child.output());

        const second = await serve(env, [], cwd);
        const again = await post(second.url);
        assert.equal(again.status, 200);
        assert.equal(((await again.json()) as { outcome: string }).outcome, 'duplicate');
        await new Promise((r) => setTimeout(r, 1500));
        second.child.kill('SIGTERM');
        assert.equal(await exitOf(second.child), 0);

        assert.equal((await store.findEvent('stripe', `evt_cli_${backend}`))?.attempts, 1, 'processed once across the restart');
        const orders = await store.db.withTables<CoursePlatformTables>().selectFrom('orders').select('id').where('payment_id', '=', paymentId).execute();
        assert.equal(orders.length, 1);
      } finally {
        await store.close();
        await rm(cwd, { recursive: true, force: true });
      }
    });

    // Separate processes on one store is the MySQL shape (README: Deployment shapes); SQLite runs one process.
    if (backend === 'mysql') {
      test('serve --no-workers only receives; worker processes (no HTTP); both exit 0 on SIGTERM', async () => {
        const eventId = `evt_cli_split_${backend}`;
        const delivery = stripeDelivery(stripePaymentEvent(eventId, 'payment_intent.succeeded', `pi_cli_split_${backend}`, { userId: 'u_cli', courseId: 'c_cli_split' }));
        const receiver = await serve({ DATABASE_URL: db.url }, ['--no-workers']);
        const store = openStore(db.url, { poolSize: 1, clock: systemClock });
        try {
          const response = await fetch(`${receiver.url}/webhooks/stripe`, { method: 'POST', headers: delivery.headers, body: delivery.body });
          assert.equal(response.status, 200);
          await new Promise((r) => setTimeout(r, 2500));
          assert.equal((await store.findEvent('stripe', eventId))?.status, 'received', 'a receive-only process does not process');

          const workers = await worker({ DATABASE_URL: db.url });
          await waitFor('the event processed by the worker', async () => (await store.findEvent('stripe', eventId))?.status === 'processed');
          assert.match(workers.output(), /"transport":"in-process"/);

          workers.kill('SIGTERM');
          receiver.child.kill('SIGTERM');
          assert.equal(await exitOf(workers), 0, workers.output());
          assert.equal(await exitOf(receiver.child), 0, receiver.child.output());
        } finally {
          await store.close();
        }
      });
    }
  });
}
