import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { adminRetentionJob } from '../../../src/admin/dashboard.js';
import { ADMIN } from '../../support/admin.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness, testConfig } from '../../support/harness.js';
import { metricValue } from '../../support/metrics.js';
import { rawExchange } from '../../support/raw-http.js';

const databases = await createTestDatabases();

/** ADMIN_TOKENS alone: the default session lifetime and sign-in limit (10 refused tokens per 15 minutes). */
const ENV = { ADMIN_TOKENS: `alice:operator:${ADMIN.operator},victor:viewer:${ADMIN.viewer}`, TRUST_PROXY: '127.0.0.1' };
const WRONG = 'wrong-token-0123456789abcdef0123456789abcdef';

interface LogLine {
  msg: string;
  clientAddress?: string;
  via?: string;
  reason?: string;
  retryAfterSeconds?: number;
  job?: string;
}

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: Record<string, unknown>;
}

async function call(
  harness: Harness,
  method: string,
  path: string,
  options: { headers?: Record<string, string>; form?: string; json?: unknown; client?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.client) headers['x-forwarded-for'] = options.client;
  if (options.form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
  if (options.json !== undefined) headers['content-type'] = 'application/json';
  const body = options.form ?? (options.json === undefined ? undefined : JSON.stringify(options.json));
  const response = await fetch(`${harness.url}${path}`, { method, headers, body, redirect: 'manual' });
  const text = await response.text();
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // A page, not JSON.
  }
  return { status: response.status, headers: response.headers, text, json };
}

/** Signs in through the form as a browser would: the session cookie (`wi_admin=...`), or the refusal. */
async function signIn(harness: Harness, token: string, client = '198.51.100.1'): Promise<{ answer: Answer; cookie: string }> {
  const answer = await call(harness, 'POST', '/admin/sign-in', { form: new URLSearchParams({ token }).toString(), client });
  return { answer, cookie: (answer.headers.get('set-cookie') ?? '').split(';')[0]! };
}

/** The session id a cookie carries (its value without the signature). */
function sessionIdOf(cookie: string): string {
  const value = decodeURIComponent(cookie.slice(cookie.indexOf('=') + 1));
  return value.slice(0, value.lastIndexOf('.'));
}

/** The CSRF token a page gives its forms in this session. */
async function csrfOf(harness: Harness, cookie: string): Promise<string> {
  const page = await call(harness, 'GET', '/admin/outbox', { headers: { cookie } });
  const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)?.[1];
  assert.ok(csrf, 'the page carries a CSRF token');
  return csrf;
}

const me = (harness: Harness, cookie: string) => call(harness, 'GET', '/admin/api/me', { headers: { cookie } });

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`admin sessions and sign-in (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let first: Harness;
    let second: Harness;
    const lines: LogLine[] = [];

    before(async () => {
      db = database as TestDatabase;
      const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });
      first = await Harness.start(db.url, ENV, { logger });
      second = await Harness.start(db.url, ENV, { logger: pino({ level: 'silent' }) });
    });
    after(async () => {
      await first?.close();
      await second?.close();
      await db?.drop();
    });

    test('a sign-in is a row holding the hash of the id the cookie carries; every instance accepts the cookie', async () => {
      const { answer, cookie } = await signIn(first, ADMIN.operator);
      assert.equal(answer.status, 303);
      const id = sessionIdOf(cookie);
      assert.match(id, /^[\w-]{43}$/, 'a random id of 32 bytes');
      const rows = await first.db.selectFrom('admin_sessions').selectAll().execute();
      const row = rows.find((r) => r.session_hash === createHash('sha256').update(id).digest('hex'));
      assert.ok(row, 'the row is found by the hash of the id');
      assert.equal(row.actor, 'alice');
      assert.ok(!JSON.stringify(rows).includes(id), 'the id itself is stored nowhere');
      assert.deepEqual((await me(first, cookie)).json, { name: 'alice', role: 'operator', via: 'session' });
      assert.deepEqual((await me(second, cookie)).json, { name: 'alice', role: 'operator', via: 'session' });
    });

    test('signing out on one instance ends the session on every instance at once: 401 on the API, sign-in for pages', async () => {
      const { cookie } = await signIn(first, ADMIN.operator);
      const other = (await signIn(second, ADMIN.operator)).cookie;
      assert.equal((await me(second, cookie)).status, 200);
      const csrf = await csrfOf(second, cookie);
      const out = await call(second, 'POST', '/admin/sign-out', { headers: { cookie }, form: new URLSearchParams({ _csrf: csrf }).toString() });
      assert.equal(out.status, 303);
      assert.equal(out.headers.get('location'), '/admin/sign-in');
      assert.match(out.headers.get('set-cookie') ?? '', /^wi_admin=;/, 'the browser is told to forget it');

      for (const harness of [first, second]) {
        assert.equal((await me(harness, cookie)).status, 401, 'the copied cookie is refused');
        const page = await call(harness, 'GET', '/admin', { headers: { cookie } });
        assert.equal(page.status, 303);
        assert.equal(page.headers.get('location'), '/admin/sign-in');
        assert.equal((await me(harness, other)).status, 200, 'another session of the same name lives on');
      }
      const hash = createHash('sha256').update(sessionIdOf(cookie)).digest('hex');
      assert.equal((await first.db.selectFrom('admin_sessions').select('id').where('session_hash', '=', hash).execute()).length, 0);
    });

    test('a session ends after ADMIN_SESSION_TTL; the hourly retention deletes the expired rows and keeps the live ones', async () => {
      const { cookie } = await signIn(first, ADMIN.viewer);
      assert.equal((await me(first, cookie)).status, 200);
      first.clock.advance(8 * 3600_000 + 1000);
      try {
        assert.equal((await me(first, cookie)).status, 401, 'expired');
        const live = (await signIn(first, ADMIN.viewer)).cookie;
        assert.equal((await me(first, live)).status, 200);
        const config = testConfig(db.url, ENV);
        await adminRetentionJob(first.db, first.clock, config.admin!).run();
        const left = await first.db.selectFrom('admin_sessions').select('session_hash').execute();
        assert.deepEqual(
          left.map((row) => row.session_hash),
          [createHash('sha256').update(sessionIdOf(live)).digest('hex')],
        );
        assert.ok(
          lines.some((line) => line.msg === 'scheduled admin sessions retention'),
          'every serve process schedules it (one runs each tick)',
        );
      } finally {
        first.clock.offsetMs = 0;
        await first.db.deleteFrom('admin_sessions').execute();
      }
    });

    test('a token removed from ADMIN_TOKENS ends its sessions', async () => {
      const { cookie } = await signIn(first, ADMIN.viewer);
      const withoutVictor = await Harness.start(db.url, { ...ENV, ADMIN_TOKENS: `alice:operator:${ADMIN.operator}` });
      try {
        assert.equal((await me(withoutVictor, cookie)).status, 401);
      } finally {
        await withoutVictor.close();
      }
    });

    test('every malformed CSRF token is a 403 csrf: non-ASCII, empty, huge, repeated, several in a form', async () => {
      const { cookie } = await signIn(first, ADMIN.viewer);
      const csrf = await csrfOf(first, cookie);
      const apiCount = (headers: Record<string, string>, json: Record<string, unknown> = { status: 'failed' }) =>
        call(first, 'POST', '/admin/api/bulk-replays/count', { headers: { cookie, ...headers }, json });
      const pageCount = (fields: string) => call(first, 'POST', '/admin/bulk-replay/count', { headers: { cookie }, form: `status=failed&${fields}` });
      const refused = (answer: Answer, what: string) => {
        assert.equal(answer.status, 403, `${what}: ${answer.text.slice(0, 200)}`);
        assert.equal(answer.json.error, 'csrf', what);
      };

      assert.equal((await apiCount({ 'x-csrf-token': csrf })).status, 200, 'the session token in a header');
      assert.equal((await pageCount(new URLSearchParams({ _csrf: csrf }).toString())).status, 200, 'the session token in a form');

      // Latin-1 and multi-byte characters: as many characters as the token, more bytes.
      refused(await apiCount({ 'x-csrf-token': `${csrf.slice(1)}é` }), 'a header with a non-ASCII character');
      refused(await apiCount({ 'x-csrf-token': 'ÿ'.repeat(csrf.length) }), 'a header of non-ASCII characters');
      refused(await pageCount(new URLSearchParams({ _csrf: `${csrf.slice(2)}😀` }).toString()), 'a form field with an emoji');
      refused(await pageCount(`_csrf=${'%C3%A9'.repeat(csrf.length)}`), 'a form field of non-ASCII characters');
      refused(await apiCount({ 'x-csrf-token': '' }), 'an empty header');
      refused(await pageCount('_csrf='), 'an empty form field');
      refused(await apiCount({ 'x-csrf-token': 'a'.repeat(8000) }), 'a huge header');
      refused(await pageCount(`_csrf=${'a'.repeat(60_000)}`), 'a huge form field');
      refused(
        await pageCount(
          new URLSearchParams([
            ['_csrf', csrf],
            ['_csrf', csrf],
          ]).toString(),
        ),
        'the token twice in a form',
      );
      refused(
        await pageCount(
          new URLSearchParams([
            ['_csrf', 'x'],
            ['_csrf', csrf],
          ]).toString(),
        ),
        'a wrong token, then the right one',
      );
      refused(await apiCount({}, { status: 'failed', _csrf: [csrf] }), 'an array in a JSON body');

      const body = '{"status":"failed"}';
      const repeated = await rawExchange(first.url, {
        head:
          `POST /admin/api/bulk-replays/count HTTP/1.1\r\nHost: ${new URL(first.url).host}\r\nCookie: ${cookie}\r\nX-CSRF-Token: ${csrf}\r\nX-CSRF-Token: ${csrf}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
        waitMs: 5000,
      });
      assert.equal(repeated.status, 403, 'the header twice');
      assert.match(repeated.text, /"error":"csrf"/);
      const bytes = await rawExchange(first.url, {
        head: Buffer.concat([
          Buffer.from(`POST /admin/api/bulk-replays/count HTTP/1.1\r\nHost: ${new URL(first.url).host}\r\nCookie: ${cookie}\r\nX-CSRF-Token: `),
          Buffer.from(`${csrf.slice(2)}é`, 'utf8'),
          Buffer.from(`\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`),
        ]),
        waitMs: 5000,
      });
      assert.equal(bytes.status, 403, 'a header of UTF-8 bytes');
    });

    test('sign-in failures: logged without the token, limited per client address on every instance (429, Retry-After), counted in the metrics', async () => {
      const attacker = '203.0.113.7';
      for (let n = 1; n <= 10; n++) {
        const { answer } = await signIn(first, `${WRONG}${n}`, attacker);
        assert.equal(answer.status, 401, `refusal ${n} is a plain one`);
      }
      const limited = await signIn(first, `${WRONG}11`, attacker);
      assert.equal(limited.answer.status, 429);
      const retryAfter = Number(limited.answer.headers.get('retry-after'));
      assert.ok(retryAfter > 14 * 60 && retryAfter <= 15 * 60, `Retry-After ${retryAfter}`);
      assert.match(limited.answer.text, /Too many refused tokens from your address: try again in 15 minutes\./);

      const right = await signIn(first, ADMIN.operator, attacker);
      assert.equal(right.answer.status, 429, 'while limited, the right token is refused too: guessing learns nothing');
      assert.equal(right.cookie, '');
      for (const token of [WRONG, ADMIN.viewer]) {
        const bearer = await call(first, 'GET', '/admin/api/me', { headers: { authorization: `Bearer ${token}` }, client: attacker });
        assert.equal(bearer.status, 429, 'a bearer token from the same address');
        assert.equal(bearer.json.error, 'too_many_sign_in_failures');
        assert.ok(Number(bearer.headers.get('retry-after')) > 0);
      }
      assert.equal((await signIn(second, ADMIN.operator, attacker)).answer.status, 429, 'the other instance knows the limit: it is in the database');
      assert.equal((await signIn(first, ADMIN.operator, '203.0.113.8')).answer.status, 303, 'another address signs in');
      const rows = await first.db.selectFrom('admin_sign_in_failures').select('client').where('client', '=', attacker).execute();
      assert.equal(rows.length, 10, 'a limited client adds no rows');

      const refusals = lines.filter((line) => line.msg === 'admin sign-in refused' && line.clientAddress === attacker);
      assert.deepEqual(
        refusals.map((line) => `${line.via} ${line.reason}`),
        [...Array<string>(10).fill('form unknown_token'), 'form rate_limited', 'form rate_limited', 'bearer rate_limited', 'bearer rate_limited'],
      );
      const foreign = await call(first, 'POST', '/admin/sign-in', {
        form: new URLSearchParams({ token: ADMIN.operator }).toString(),
        headers: { origin: 'https://evil.example' },
        client: '203.0.113.9',
      });
      assert.equal(foreign.status, 403, 'a sign-in posted from another site');
      assert.ok(lines.some((line) => line.msg === 'admin sign-in refused' && line.clientAddress === '203.0.113.9' && line.reason === 'foreign_origin'));
      assert.ok(!JSON.stringify(lines).includes(WRONG) && !JSON.stringify(lines).includes(ADMIN.operator), 'no token reaches the log');

      const metrics = await (await fetch(`${first.url}/metrics`)).text();
      const failures = (via: string, reason: string) => metricValue(metrics, 'webhook_inbox_admin_sign_in_failures_total', { via, reason });
      assert.equal(failures('form', 'unknown_token'), 10);
      assert.equal(failures('form', 'rate_limited'), 2);
      assert.equal(failures('bearer', 'rate_limited'), 2);
      assert.equal(failures('bearer', 'unknown_token'), 0);
      assert.doesNotMatch(metrics, /wrong-token/);

      first.clock.advance(15 * 60_000 + 1000);
      try {
        assert.equal((await signIn(first, ADMIN.operator, attacker)).answer.status, 303, 'once the window has passed');
        await adminRetentionJob(first.db, first.clock, testConfig(db.url, ENV).admin!).run();
        assert.equal((await first.db.selectFrom('admin_sign_in_failures').select('id').execute()).length, 0, 'the retention deletes what the window has passed');
      } finally {
        first.clock.offsetMs = 0;
      }
    });

    test("the admin API's unexpected errors speak of the admin, not of a delivery", async () => {
      await first.db.schema.dropTable('admin_actions').execute();
      const answer = await call(first, 'GET', '/admin/api/audit', { headers: { authorization: `Bearer ${ADMIN.viewer}` } });
      assert.equal(answer.status, 500);
      assert.deepEqual(answer.json, { error: 'internal_error', message: 'internal error of the admin API (logged)' });
    });
  });
}
