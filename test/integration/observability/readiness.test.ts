import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createTestDatabase, createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';
import { TcpProxy } from '../../support/tcp-proxy.js';

const proxiedDatabase = await createTestDatabase('mysql');
const unmigratedDatabases = await createTestDatabases();

interface Readyz {
  status: number;
  body: { status: string; checks: Record<string, { ok: boolean; ms: number; error?: string }> };
}

/** Asked on the management port, where each failing check gives its error (management-port.test.ts has the public port's answer). */
async function readyz(harness: Harness): Promise<Readyz> {
  const response = await fetch(`${harness.managementUrl}/readyz`);
  return { status: response.status, body: (await response.json()) as Readyz['body'] };
}

describe('health and readiness when the database goes away and comes back', { skip: 'skip' in proxiedDatabase && proxiedDatabase.skip }, () => {
  let db: TestDatabase;
  let proxy: TcpProxy;
  let harness: Harness;

  before(async () => {
    db = proxiedDatabase as TestDatabase;
    const direct = new URL(db.url);
    proxy = new TcpProxy({ host: direct.hostname, port: Number(direct.port || 3306) });
    await proxy.open();
    const proxied = new URL(db.url);
    proxied.host = `127.0.0.1:${proxy.port}`;
    harness = await Harness.start(proxied.toString(), { MANAGEMENT_PORT: '0' });
  });
  after(async () => {
    await harness?.close();
    await proxy?.close();
    await db?.drop();
  });

  test('ready, then 503 naming the store while it is unreachable, then ready again without a restart', async () => {
    const ready = await readyz(harness);
    assert.equal(ready.status, 200, JSON.stringify(ready.body));
    assert.equal(ready.body.status, 'ready');
    assert.deepEqual(Object.keys(ready.body.checks).sort(), ['migrations', 'store']);
    assert.ok(Object.values(ready.body.checks).every((check) => check.ok));

    await proxy.close();
    const down = await readyz(harness);
    assert.equal(down.status, 503);
    assert.equal(down.body.status, 'not_ready');
    assert.equal(down.body.checks.store?.ok, false);
    assert.match(down.body.checks.store?.error ?? '', /database unavailable/);
    assert.equal((await fetch(`${harness.url}/healthz`)).status, 200, 'the process itself is alive');
    const delivery = stripeDelivery(stripePaymentEvent('evt_ready_1', 'payment_intent.succeeded', 'pi_ready_1'));
    assert.equal((await harness.post(delivery)).status, 503, 'and deliveries are refused meanwhile');

    await proxy.open();
    await harness.waitFor('/readyz to answer 200 again', async () => (await readyz(harness)).status === 200);
    assert.equal((await harness.post(delivery)).status, 200);
  });
});

for (const backend of STORE_BACKENDS) {
  const database = unmigratedDatabases[backend];
  describe(`readiness: pending migrations and registered checks (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let harness: Harness;
    let queueUp = true;

    before(async () => {
      db = database as TestDatabase;
      const queue = {
        name: 'queue',
        check: async () => {
          if (!queueUp) throw new Error('redis: connection refused');
        },
      };
      harness = await Harness.start(db.url, { MIGRATE_ON_START: 'false', MANAGEMENT_PORT: '0' }, { readinessChecks: [queue] });
    });
    after(async () => {
      await harness?.close();
      await db?.drop();
    });

    test('503 until the migrations are applied, and while a registered check fails', async () => {
      const unmigrated = await readyz(harness);
      assert.equal(unmigrated.status, 503);
      assert.equal(unmigrated.body.checks.store?.ok, true);
      assert.equal(unmigrated.body.checks.migrations?.ok, false);
      assert.match(unmigrated.body.checks.migrations?.error ?? '', /not applied: 0001_webhook_events, 0002_course_platform, 0003_payment_leases/);
      assert.equal(unmigrated.body.checks.queue?.ok, true);

      await harness.inbox.store.migrate();
      assert.equal((await readyz(harness)).status, 200);

      queueUp = false;
      const queueDown = await readyz(harness);
      assert.equal(queueDown.status, 503);
      assert.deepEqual(
        Object.entries(queueDown.body.checks)
          .filter(([, check]) => !check.ok)
          .map(([name, check]) => [name, check.error]),
        [['queue', 'redis: connection refused']],
      );
      queueUp = true;
      assert.equal((await readyz(harness)).status, 200);
    });
  });
}
