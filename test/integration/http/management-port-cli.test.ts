import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import { exitOf, runCli } from '../../support/cli.js';
import { ADMIN_ENV } from '../../support/admin.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { waitFor } from '../../support/harness.js';
import { freePort, killAll, serve, worker } from '../../support/processes.js';

// The listeners do not depend on the store: the embedded one, as a first install runs.
const db = (await createTestDatabase('sqlite')) as TestDatabase;
const SHARED_PORT_WARNING = /MANAGEMENT_PORT is not set: \/metrics, \/readyz and \/admin share the public port/g;

async function status(url: string): Promise<number> {
  const response = await fetch(url, { redirect: 'manual' });
  await response.arrayBuffer();
  return response.status;
}

async function refused(url: string): Promise<boolean> {
  return fetch(url).then(
    () => false,
    () => true,
  );
}

/** The start log's line naming the listeners, parsed. */
function listeningLine(output: string): Record<string, unknown> {
  const line = output.split('\n').find((text) => text.includes('"msg":"listening on'));
  assert.ok(line, `a start log line names the listeners:\n${output}`);
  return JSON.parse(line) as Record<string, unknown>;
}

describe('serve and worker with and without MANAGEMENT_PORT', () => {
  after(async () => {
    await killAll();
    await db.drop();
  });

  test('serve without MANAGEMENT_PORT: every route on one port, and the start log warns once that they share it', async () => {
    const { child, url } = await serve({ DATABASE_URL: db.url, LOG_LEVEL: 'info', ...ADMIN_ENV });
    for (const path of ['/healthz', '/readyz', '/metrics', '/admin/sign-in']) assert.equal(await status(`${url}${path}`), 200, path);
    await waitFor('the listening line', () => child.output().includes('"msg":"listening on'));
    assert.equal(child.output().match(SHARED_PORT_WARNING)?.length, 1, child.output());
    assert.deepEqual(listeningLine(child.output()).webhooks, url);
    child.kill('SIGTERM');
    assert.equal(await exitOf(child), 0, child.output());
  });

  test('serve with MANAGEMENT_PORT: the start log names both listeners; each answers its routes; SIGTERM closes both and exits 0', async () => {
    const managementPort = await freePort();
    const { child, url } = await serve({ DATABASE_URL: db.url, LOG_LEVEL: 'info', MANAGEMENT_PORT: String(managementPort), ...ADMIN_ENV });
    const management = `http://127.0.0.1:${managementPort}`;
    await waitFor('the listening line', () => child.output().includes('"msg":"listening on'));
    assert.deepEqual([listeningLine(child.output()).webhooks, listeningLine(child.output()).management], [url, management]);
    assert.doesNotMatch(child.output(), SHARED_PORT_WARNING);
    assert.equal(await status(`${url}/healthz`), 200);
    for (const path of ['/readyz', '/metrics', '/admin/sign-in']) assert.equal(await status(`${url}${path}`), 404, `${path} on the webhook port`);
    for (const path of ['/healthz', '/readyz', '/metrics', '/admin/sign-in']) assert.equal(await status(`${management}${path}`), 200, `${path} on the management port`);

    child.kill('SIGTERM');
    assert.equal(await exitOf(child), 0, child.output());
    assert.ok((await refused(`${url}/healthz`)) && (await refused(`${management}/healthz`)), 'neither port answers any more');
  });

  test('serve exits 1 naming MANAGEMENT_HOST and MANAGEMENT_PORT when the management port is taken, and 2 when it is PORT', async () => {
    const taken = createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    try {
      const { port } = taken.address() as AddressInfo;
      const child = runCli(['serve'], { DATABASE_URL: db.url, HOST: '127.0.0.1', PORT: String(await freePort()), MANAGEMENT_PORT: String(port) });
      assert.equal(await exitOf(child), 1, child.output());
      assert.match(child.output(), new RegExp(`cannot listen on MANAGEMENT_HOST 127\\.0\\.0\\.1, MANAGEMENT_PORT ${port}: .*EADDRINUSE`));
    } finally {
      taken.close();
    }
    const same = runCli(['serve'], { DATABASE_URL: db.url, PORT: '8080', MANAGEMENT_PORT: '8080' });
    assert.equal(await exitOf(same), 2);
    assert.match(same.output(), /MANAGEMENT_PORT must differ from PORT/);
  });

  test('worker with MANAGEMENT_PORT answers /healthz, /readyz and /metrics there, and exits 0 on SIGTERM', async () => {
    const managementPort = await freePort();
    const child = await worker({ DATABASE_URL: db.url, MANAGEMENT_PORT: String(managementPort) });
    const management = `http://127.0.0.1:${managementPort}`;
    await waitFor('the management listener', async () => !(await refused(`${management}/healthz`)));
    for (const path of ['/healthz', '/readyz', '/metrics']) assert.equal(await status(`${management}${path}`), 200, path);
    assert.match(await (await fetch(`${management}/metrics`)).text(), /^# TYPE webhook_inbox_processing_attempts_total counter$/m);
    assert.equal(await status(`${management}/admin/sign-in`), 404, 'the dashboard stays with serve');
    child.kill('SIGTERM');
    assert.equal(await exitOf(child), 0, child.output());
  });
});
