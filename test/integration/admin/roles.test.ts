import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN, ADMIN_ENV } from '../../support/admin.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const databases = await createTestDatabases();

interface Route {
  path: string;
  /** JSON for the API, form fields for a page. */
  body: Record<string, unknown>;
}

/** Each action of /admin, through the API and through its page, and whether a viewer may do it. */
interface Action {
  name: string;
  viewer: boolean;
  api: Route;
  page: Route;
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`admin roles: one rule per action for pages and API (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let service: Harness;
    let eventId: number;

    const post = async (token: string, route: Route, form: boolean) => {
      const body = form ? new URLSearchParams(route.body as Record<string, string>).toString() : JSON.stringify(route.body);
      const response = await fetch(`${service.url}${route.path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': form ? 'application/x-www-form-urlencoded' : 'application/json' },
        body,
        redirect: 'manual',
      });
      return { status: response.status, text: await response.text() };
    };

    before(async () => {
      db = database as TestDatabase;
      service = await Harness.start(db.url, ADMIN_ENV);
      const answer = await service.post(stripeDelivery(stripePaymentEvent('evt_roles_1', 'payment_intent.succeeded', 'pi_roles_1', { userId: 'u_1', courseId: 'c_1' })));
      assert.equal(answer.status, 200);
      await service.waitUntilProcessed(1);
      eventId = (await service.db.selectFrom('webhook_events').select('id').executeTakeFirstOrThrow()).id;
    });
    after(async () => {
      await service?.close();
      await db?.drop();
    });

    const actions = (): Action[] => [
      {
        name: 'replay',
        viewer: false,
        api: { path: `/admin/api/events/${eventId}/replay`, body: { dryRun: false, reason: 'r' } },
        page: { path: `/admin/events/${eventId}/replay`, body: { dryRun: 'false', reason: 'r' } },
      },
      {
        name: 'replay dry run',
        viewer: true,
        api: { path: `/admin/api/events/${eventId}/replay`, body: { dryRun: true } },
        page: { path: `/admin/events/${eventId}/replay`, body: { dryRun: 'true' } },
      },
      {
        name: 'outbox retry',
        viewer: false,
        api: { path: '/admin/api/outbox/1/retry', body: { reason: 'r' } },
        page: { path: '/admin/outbox/1/retry', body: { reason: 'r' } },
      },
      {
        name: 'bulk replay count',
        viewer: true,
        api: { path: '/admin/api/bulk-replays/count', body: { status: 'processed' } },
        page: { path: '/admin/bulk-replay/count', body: { status: 'processed' } },
      },
      {
        name: 'bulk replay start',
        viewer: false,
        api: { path: '/admin/api/bulk-replays', body: { status: 'processed', reason: 'r', expectedCount: 1 } },
        page: { path: '/admin/bulk-replay', body: { status: 'processed', reason: 'r', expectedCount: '1' } },
      },
      {
        name: 'bulk replay cancel',
        viewer: false,
        api: { path: '/admin/api/bulk-replays/nobody/cancel', body: {} },
        page: { path: '/admin/bulk-replay/nobody/cancel', body: {} },
      },
    ];

    test('a viewer is allowed or refused each action alike through the API and through its page', async () => {
      for (const action of actions()) {
        const api = await post(ADMIN.viewer, action.api, false);
        const page = await post(ADMIN.viewer, action.page, true);
        if (action.viewer) {
          assert.equal(api.status, 200, `${action.name} (API): ${api.text.slice(0, 200)}`);
          assert.equal(page.status, 200, `${action.name} (page): ${page.text.slice(0, 200)}`);
        } else {
          assert.equal(api.status, 403, `${action.name} (API)`);
          assert.deepEqual(JSON.parse(api.text), { error: 'forbidden', message: 'this needs the operator role; a viewer may only read' }, action.name);
          assert.equal(page.status, 403, `${action.name} (page)`);
          assert.match(page.text, /<p class="error">this needs the operator role; a viewer may only read<\/p>/, action.name);
        }
      }
    });

    test("a viewer's count of a bulk replay shows the count, with no start; an operator's offers to start it", async () => {
      const count = actions().find((action) => action.name === 'bulk replay count')!;
      const viewer = await post(ADMIN.viewer, count.page, true);
      assert.match(viewer.text, /<strong id="bulk-total">1<\/strong>/);
      assert.doesNotMatch(viewer.text, /id="bulk-start"/);
      assert.match(viewer.text, /Starting it needs the operator role/);
      assert.match((await post(ADMIN.operator, count.page, true)).text, /id="bulk-start"/);
      assert.deepEqual(JSON.parse((await post(ADMIN.viewer, count.api, false)).text), { count: 1 });
      const problems = await fetch(`${service.url}/admin/problems`, { headers: { authorization: `Bearer ${ADMIN.viewer}` } });
      assert.match(await problems.text(), /id="bulk-count"/, 'the failed-and-stuck screen offers a viewer the count');
    });

    test('an operator passes the role check of every action', async () => {
      for (const action of actions()) {
        for (const [route, form] of [
          [action.api, false],
          [action.page, true],
        ] as const) {
          const answer = await post(ADMIN.operator, route, form);
          assert.notEqual(answer.status, 403, `${action.name} (${form ? 'page' : 'API'}): ${answer.text.slice(0, 200)}`);
        }
      }
    });
  });
}
