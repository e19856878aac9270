import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createApp } from '../../../src/app.js';
import { SECURITY_HEADERS } from '../../../src/http/admin/security-headers.js';
import { ADMIN, ADMIN_ENV } from '../../support/admin.js';
import { createTestDatabase, createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness, testConfig } from '../../support/harness.js';
import { SERVER_BACKENDS, STORE_NAMES } from '../../support/services.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';
import { TcpProxy } from '../../support/tcp-proxy.js';

const databases = await createTestDatabases();
const proxiedDatabases = { mysql: await createTestDatabase('mysql'), postgres: await createTestDatabase('postgres') };
const closingDatabase = await createTestDatabase('sqlite');

const BEARER = { authorization: `Bearer ${ADMIN.operator}` };

/** What each route answers when asked with the operator's token, per listener. */
const MANAGEMENT_ROUTES = ['/readyz', '/metrics', '/admin/api/events', '/admin/api/openapi.json', '/admin/assets/admin.css', '/admin/sign-in', '/admin/events'];

async function get(base: string, path: string, headers: Record<string, string> = BEARER): Promise<{ status: number; headers: Headers; text: string }> {
  const response = await fetch(`${base}${path}`, { headers, redirect: 'manual' });
  return { status: response.status, headers: response.headers, text: await response.text() };
}

function assertSecurityHeaders(answer: { status: number; headers: Headers }, what: string): void {
  for (const [name, value] of Object.entries(SECURITY_HEADERS)) assert.equal(answer.headers.get(name), value, `${what} (${answer.status}) carries ${name}`);
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`the management listener (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let split: Harness;
    let single: Harness;

    before(async () => {
      db = database as TestDatabase;
      split = await Harness.start(db.url, { ...ADMIN_ENV, MANAGEMENT_PORT: '0' });
      single = await Harness.start(db.url, ADMIN_ENV);
    });
    after(async () => {
      await split?.close();
      await single?.close();
      await db?.drop();
    });

    test('MANAGEMENT_PORT set: the webhook port answers /webhooks/* and /healthz only, with its JSON 404 for the rest', async () => {
      assert.notEqual(split.managementUrl, null);
      assert.notEqual(split.managementUrl, split.url);
      const delivery = stripeDelivery(stripePaymentEvent(`evt_mgmt_${backend}`, 'payment_intent.succeeded', `pi_mgmt_${backend}`));
      assert.equal((await split.post(delivery)).status, 200);
      assert.deepEqual(JSON.parse((await get(split.url, '/healthz')).text), { status: 'ok' });
      for (const path of MANAGEMENT_ROUTES) {
        const answer = await get(split.url, path);
        assert.equal(answer.status, 404, `${path} on the webhook port`);
        assert.deepEqual(JSON.parse(answer.text), { error: 'not_found', message: `no route for GET ${path}` });
      }
    });

    test('MANAGEMENT_PORT set: the management port answers /healthz, /readyz (with details), /metrics and every /admin route, and no webhook', async () => {
      const base = split.managementUrl!;
      assert.equal((await get(base, '/healthz')).status, 200);
      const ready = await get(base, '/readyz');
      assert.equal(ready.status, 200, ready.text);
      assert.deepEqual(Object.keys((JSON.parse(ready.text) as { checks: object }).checks).sort(), ['migrations', 'store']);
      assert.match((await get(base, '/metrics')).text, /^webhook_inbox_deliveries_total\{provider="stripe",result="accepted"\} 1$/m);
      for (const path of MANAGEMENT_ROUTES) assert.equal((await get(base, path)).status, 200, `${path} on the management port`);
      const delivery = stripeDelivery(stripePaymentEvent(`evt_mgmt_wrong_port_${backend}`, 'payment_intent.succeeded', `pi_mgmt_wrong_port_${backend}`));
      const response = await fetch(`${base}/webhooks/stripe`, { method: 'POST', headers: delivery.headers, body: delivery.body });
      assert.equal(response.status, 404);
      assert.equal(await split.inbox.store.findEvent('stripe', `evt_mgmt_wrong_port_${backend}`), null, 'nothing recorded from the management port');
    });

    test('MANAGEMENT_PORT unset: one port answers every route, as before', async () => {
      assert.equal(single.managementUrl, null);
      assert.equal((await get(single.url, '/healthz')).status, 200);
      for (const path of MANAGEMENT_ROUTES) assert.equal((await get(single.url, path)).status, 200, `${path} on the one port`);
    });

    test('every /admin answer carries the security headers, unknown routes and errors answered before any route included, on both ports', async () => {
      const tooLarge = JSON.stringify({ filter: 'x'.repeat(1024 * 1024 + 1) });
      const requests: Array<[string, RequestInit]> = [
        ['/admin/nope', { headers: BEARER }],
        ['/admin/nope', {}],
        ['/admin/api/nope', { headers: BEARER }],
        ['/admin/api/nope', {}],
        ['/admin/%6Eope', { headers: BEARER }],
        ['/admin/api/events', {}],
        ['/admin/api/events?limit=abc', { headers: BEARER }],
        ['/admin/api/events?from=not-a-date', { headers: BEARER }],
        ['/admin/api/bulk-replays/count', { method: 'POST', headers: { ...BEARER, 'content-type': 'application/json' }, body: tooLarge }],
        ['/admin/api/bulk-replays/count', { method: 'POST', headers: { ...BEARER, 'content-type': 'application/xml' }, body: '<filter/>' }],
        ['/admin/api/bulk-replays/count', { method: 'POST', headers: { ...BEARER, 'content-type': 'application/json' }, body: '{"status":' }],
        ['/admin', { headers: BEARER }],
      ];
      for (const base of [split.managementUrl!, single.url]) {
        const statuses: number[] = [];
        for (const [path, init] of requests) {
          const response = await fetch(`${base}${path}`, { ...init, redirect: 'manual' });
          await response.arrayBuffer();
          statuses.push(response.status);
          assertSecurityHeaders(response, `${init.method ?? 'GET'} ${path} on ${base === single.url ? 'the one port' : 'the management port'}`);
        }
        assert.deepEqual(statuses, [404, 404, 404, 404, 404, 401, 400, 400, 413, 415, 400, 200], 'each request reached the answer it is meant to test');
      }
      // The webhook port's 404 for a management route is an /admin answer too.
      assertSecurityHeaders(await get(split.url, '/admin/api/events'), 'the webhook port');
      assert.equal((await get(split.url, '/nope')).headers.get('content-security-policy'), null, 'answers outside /admin are left as they were');
    });
  });
}

for (const backend of SERVER_BACKENDS) {
  const database = proxiedDatabases[backend];
  describe(`/readyz with the database unreachable (${STORE_NAMES[backend]})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let proxy: TcpProxy;
    let split: Harness;
    let single: Harness;

    before(async () => {
      db = database as TestDatabase;
      const direct = new URL(db.url);
      proxy = new TcpProxy({ host: direct.hostname, port: Number(direct.port) });
      await proxy.open();
      const proxied = new URL(db.url);
      proxied.host = `127.0.0.1:${proxy.port}`;
      split = await Harness.start(proxied.toString(), { MANAGEMENT_PORT: '0' });
      single = await Harness.start(proxied.toString());
    });
    after(async () => {
      await split?.close();
      await single?.close();
      await proxy?.close();
      await db?.drop();
    });

    test('a public port names the failing check without the driver text; the management port gives the details', async () => {
      await proxy.close();
      const publicAnswer = await get(single.url, '/readyz', {});
      assert.equal(publicAnswer.status, 503);
      const body = JSON.parse(publicAnswer.text) as { status: string; checks: Record<string, { ok: boolean; ms: number; error?: string }> };
      assert.equal(body.status, 'not_ready');
      assert.deepEqual(
        Object.entries(body.checks)
          .filter(([, check]) => !check.ok)
          .map(([name, check]) => [name, check.error])
          .sort(),
        [
          ['migrations', 'unavailable'],
          ['store', 'unavailable'],
        ],
      );
      assert.doesNotMatch(publicAnswer.text, /database|ECONN|refused|closed|terminated|127\.0\.0\.1|\d{4,}/i, 'no driver text, host or port');

      const details = await get(split.managementUrl!, '/readyz', {});
      assert.equal(details.status, 503);
      const store = (JSON.parse(details.text) as typeof body).checks.store;
      assert.equal(store?.ok, false);
      assert.match(store?.error ?? '', /database unavailable/);
      assert.equal((await get(split.url, '/readyz', {})).status, 404, 'and the webhook port has no /readyz');
    });
  });
}

describe('closing the servers', () => {
  const db = closingDatabase as TestDatabase;
  after(() => db.drop());

  test('the webhook port stops first, then the management port, while the store is still open; then the inbox stops', async () => {
    const { app, management, inbox } = await createApp(testConfig(db.url, { MANAGEMENT_PORT: '0' }), { workers: false });
    assert.ok(management);
    const seen: string[] = [];
    management.addHook('preClose', async () => {
      seen.push(`management closing; webhook port listening: ${app.server.listening}`);
      await inbox.store.ping();
      seen.push('store open');
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    await management.listen({ host: '127.0.0.1', port: 0 });
    await app.close();
    assert.deepEqual(seen, ['management closing; webhook port listening: false', 'store open']);
    assert.equal(management.server.listening, false);
    await assert.rejects(inbox.store.ping(), 'the inbox stopped after both listeners');
  });
});
