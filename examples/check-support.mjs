/**
 * What the examples' checks share: a temporary environment, the provider's side, waiting. Plain
 * JavaScript, so that the JavaScript example runs it as it is; its JSDoc types are checked with the
 * TypeScript examples (checkJs).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

/**
 * An inbox on a fresh SQLite file with a Stripe secret of its own, quiet unless something goes wrong.
 * @param {string} name
 */
export async function exampleEnvironment(name) {
  const dir = await mkdtemp(join(tmpdir(), `webhook-inbox-${name}-`));
  const secret = `whsec_${randomBytes(24).toString('base64')}`;
  const env = { DATABASE_URL: `sqlite:${join(dir, 'inbox.db')}`, STRIPE_WEBHOOK_SECRET: secret, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn', SWEEP_INTERVAL_MS: '100' };
  return { env, dir, secret };
}

/**
 * The provider's side, by the package's own CLI (`webhook-inbox send`): one signed capture,
 * delivered 8 times at the same moment, twice over. Every copy must be acknowledged.
 * @param {string} url
 * @param {string} secret
 * @param {{ payment: string; user: string; course: string }} payment
 * @returns {Promise<void>}
 */
export async function sendDuplicates(url, secret, payment) {
  const bin = join(dirname(createRequire(import.meta.url).resolve('webhook-inbox/package.json')), 'bin/webhook-inbox.js');
  const args = [
    'send',
    'stripe',
    'payment_intent.succeeded',
    '--url',
    url,
    '--payment',
    payment.payment,
    '--user',
    payment.user,
    '--course',
    payment.course,
    '--concurrent',
    '8',
    '--repeat',
    '2',
    '--json',
  ];
  const { stdout } = await promisify(execFile)(process.execPath, [bin, ...args], { env: { PATH: process.env.PATH, STRIPE_WEBHOOK_SECRET: secret } });
  const report = /** @type {{ deliveries: Array<{ status: number | null }>; unexpected: number }} */ (JSON.parse(stdout));
  assert.equal(report.deliveries.length, 16);
  assert.equal(report.unexpected, 0, `every copy acknowledged: ${stdout}`);
}

/**
 * @param {string} what
 * @param {() => Promise<boolean>} check
 * @returns {Promise<void>}
 */
export async function waitFor(what, check, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * The course platform was not asked for, so its tables were never made.
 * @param {import('webhook-inbox').Inbox} inbox
 * @returns {Promise<void>}
 */
export async function noCourseTables(inbox) {
  const tables = (await inbox.database.introspection.getTables()).map((table) => table.name);
  assert.ok(!tables.includes('orders') && !tables.includes('enrollments'), `no course tables: ${tables.join(', ')}`);
}
