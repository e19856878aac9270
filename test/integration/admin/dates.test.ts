import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN, ADMIN_ENV } from '../../support/admin.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const databases = await createTestDatabases();

/** Times that read like dates but name none the calendar has, or fall outside 1970-9999 once their offset is applied. */
const IMPOSSIBLE_TIMES = [
  '2026-02-30',
  '2026-02-29T10:00:00Z',
  '2026-04-31',
  '2026-13-01',
  '2026-00-10',
  '2026-01-01T24:00:00Z',
  '2026-01-01T10:60:00Z',
  '2026-01-01T10:00:60Z',
  '2026-01-01T10:00:00+24:00',
  '9999-12-31T23:59:59-14:00',
  '1970-01-01T00:30:00+01:00',
  '1969-12-31',
  '0000-01-01',
];

/** Cursors shaped as the API makes them, whose time is impossible. */
const IMPOSSIBLE_CURSORS = ['2026-02-30 10:00:00.000', '2026-01-01 25:00:00.000', '2026-01-01 10:61:00.000', '0000-01-01 00:00:00.000', '1969-12-31 23:59:59.999'].map((at) =>
  Buffer.from(JSON.stringify([at, 1])).toString('base64url'),
);

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`admin dates and cursors (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let service: Harness;

    const call = async (method: string, path: string, body?: { json?: unknown; form?: Record<string, string> }) => {
      const headers: Record<string, string> = { authorization: `Bearer ${ADMIN.operator}` };
      if (body?.json !== undefined) headers['content-type'] = 'application/json';
      if (body?.form !== undefined) headers['content-type'] = 'application/x-www-form-urlencoded';
      const payload = body?.form ? new URLSearchParams(body.form).toString() : body?.json === undefined ? undefined : JSON.stringify(body.json);
      const response = await fetch(`${service.url}${path}`, { method, headers, body: payload, redirect: 'manual' });
      return { status: response.status, type: response.headers.get('content-type') ?? '', text: await response.text() };
    };
    /** A 400 naming `parameter`: JSON from the API, a readable page from a page route. */
    const refused = (answer: { status: number; type: string; text: string }, parameter: string, what: string) => {
      assert.equal(answer.status, 400, `${what}: ${answer.text.slice(0, 300)}`);
      if (answer.type.startsWith('application/json')) assert.match((JSON.parse(answer.text) as { message: string }).message, new RegExp(`^${parameter}: `), what);
      else assert.match(answer.text, new RegExp(`<p class="error">${parameter}: `), what);
    };

    before(async () => {
      db = database as TestDatabase;
      service = await Harness.start(db.url, ADMIN_ENV);
      const answer = await service.post(stripeDelivery(stripePaymentEvent('evt_dates_1', 'payment_intent.succeeded', 'pi_dates_1', { userId: 'u_1', courseId: 'c_1' })));
      assert.equal(answer.status, 200);
      await service.waitUntilProcessed(1);
    });
    after(async () => {
      await service?.close();
      await db?.drop();
    });

    test('a time the calendar does not have, or outside 1970-9999, is a 400 naming its parameter on every filter', async () => {
      for (const value of IMPOSSIBLE_TIMES) {
        for (const name of ['from', 'to']) {
          const query = new URLSearchParams({ [name]: value }).toString();
          refused(await call('GET', `/admin/api/events?${query}`), name, `API events ${query}`);
          refused(await call('GET', `/admin/events?${query}`), name, `events page ${query}`);
          refused(await call('POST', '/admin/api/bulk-replays/count', { json: { status: 'processed', [name]: value } }), name, `API bulk count ${query}`);
          refused(await call('POST', '/admin/bulk-replay/count', { form: { status: 'processed', [name]: value } }), name, `bulk count page ${query}`);
          refused(await call('POST', '/admin/api/bulk-replays', { json: { status: 'processed', [name]: value, reason: 'r', expectedCount: 1 } }), name, `API bulk start ${query}`);
        }
      }
    });

    test('a cursor whose time is impossible is a 400 naming it, on the events and the reconcile runs', async () => {
      for (const cursor of IMPOSSIBLE_CURSORS) {
        for (const path of ['/admin/api/events', '/admin/events', '/admin/api/reconcile/runs', '/admin/reconcile']) {
          refused(await call('GET', `${path}?cursor=${cursor}`), 'cursor', `${path} ${Buffer.from(cursor, 'base64url').toString()}`);
        }
      }
    });

    test('times the calendar has still filter: a leap day, offsets, the last moment a stored time holds, a cursor as returned', async () => {
      const events = async (query: string) => {
        const answer = await call('GET', `/admin/api/events?${query}`);
        assert.equal(answer.status, 200, `${query}: ${answer.text}`);
        return JSON.parse(answer.text) as { events: Array<{ eventId: string }>; nextCursor: string | null };
      };
      assert.deepEqual(
        (await events('from=2024-02-29&to=9999-12-31T23:59:59%2B14:00')).events.map((e) => e.eventId),
        ['evt_dates_1'],
      );
      assert.deepEqual((await events('from=1970-01-01T01:00:00%2B01:00&to=9999-12-31T23:59:59.999Z')).events.length, 1);
      assert.deepEqual((await events('to=2024-02-29T12:00:00-05:30')).events, []);
      const at = new Date().toISOString().slice(0, 23).replace('T', ' ');
      const cursor = Buffer.from(JSON.stringify([at, 999_999])).toString('base64url');
      assert.equal((await events(`cursor=${cursor}`)).events.length, 1, 'older than now');
      assert.equal((await call('GET', `/admin/reconcile?cursor=${cursor}`)).status, 200);
    });
  });
}
