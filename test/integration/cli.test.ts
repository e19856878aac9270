import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { createConnection } from 'mysql2/promise';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { waitFor } from '../support/harness.js';
import { exitOf, runCli as run, serve, worker } from '../support/processes.js';
import { stripeDelivery, stripePaymentEvent } from '../support/signing.js';

const database = await createTestDatabase();

describe('the webhook-inbox command', { skip: 'skip' in database && database.skip }, () => {
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

  test('serve receives and processes; SIGTERM exits cleanly; a restart does not process again', async () => {
    const delivery = stripeDelivery(stripePaymentEvent('evt_cli_1', 'payment_intent.succeeded', 'pi_cli_1', { userId: 'u_cli', courseId: 'c_cli' }));
    const first = await serve({ DATABASE_URL: db.url });
    const response = await fetch(`${first.url}/webhooks/stripe`, { method: 'POST', headers: delivery.headers, body: delivery.body });
    assert.equal(response.status, 200);

    const sql = await createConnection({ uri: db.url });
    try {
      await waitFor('evt_cli_1 processed', async () => {
        const [rows] = await sql.query("SELECT status FROM webhook_events WHERE event_id = 'evt_cli_1'");
        return (rows as Array<{ status: string }>)[0]?.status === 'processed';
      });

      first.child.kill('SIGTERM');
      assert.equal(await exitOf(first.child), 0, first.child.output());

      const second = await serve({ DATABASE_URL: db.url });
      const again = await fetch(`${second.url}/webhooks/stripe`, { method: 'POST', headers: delivery.headers, body: delivery.body });
      assert.equal(again.status, 200);
      assert.equal(((await again.json()) as { outcome: string }).outcome, 'duplicate');
      await new Promise((r) => setTimeout(r, 1500));
      second.child.kill('SIGTERM');
      assert.equal(await exitOf(second.child), 0);

      const [events] = await sql.query("SELECT attempts FROM webhook_events WHERE event_id = 'evt_cli_1'");
      assert.deepEqual(events, [{ attempts: 1 }], 'processed once across the restart');
      const [orders] = await sql.query("SELECT COUNT(*) AS n FROM orders WHERE payment_id = 'pi_cli_1'");
      assert.deepEqual(orders, [{ n: 1 }]);
    } finally {
      await sql.end();
    }
  });

  test('serve --no-workers only receives; worker processes (no HTTP); both exit 0 on SIGTERM', async () => {
    const delivery = stripeDelivery(stripePaymentEvent('evt_cli_2', 'payment_intent.succeeded', 'pi_cli_2', { userId: 'u_cli', courseId: 'c_cli_2' }));
    const receiver = await serve({ DATABASE_URL: db.url }, ['--no-workers']);
    const sql = await createConnection({ uri: db.url });
    const status = async () => ((await sql.query("SELECT status FROM webhook_events WHERE event_id = 'evt_cli_2'"))[0] as Array<{ status: string }>)[0]?.status;
    try {
      const response = await fetch(`${receiver.url}/webhooks/stripe`, { method: 'POST', headers: delivery.headers, body: delivery.body });
      assert.equal(response.status, 200);
      await new Promise((r) => setTimeout(r, 2500));
      assert.equal(await status(), 'received', 'a receive-only process does not process');

      const workers = await worker({ DATABASE_URL: db.url });
      await waitFor('evt_cli_2 processed by the worker', async () => (await status()) === 'processed');
      assert.match(workers.output(), /"transport":"in-process"/);

      workers.kill('SIGTERM');
      receiver.child.kill('SIGTERM');
      assert.equal(await exitOf(workers), 0, workers.output());
      assert.equal(await exitOf(receiver.child), 0, receiver.child.output());
    } finally {
      await sql.end();
    }
  });
});
