import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DeliveryStatsRecorder } from '../../../src/observability/delivery-stats.js';
import { ADMIN, startAdminService } from '../../support/admin.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import type { Harness } from '../../support/harness.js';
import { codesShown } from '../../support/page-words.js';

/** Rendering is the same over every store (the payment pages' data is checked on each in payments.test.ts). */
const database = (await createTestDatabase('sqlite')) as TestDatabase;

describe('every screen of the dashboard speaks words, not codes or column names', () => {
  let service: Harness;
  let failedId: number;

  const page = async (method: 'GET' | 'POST', path: string, form?: Record<string, string>): Promise<string> => {
    const response = await fetch(`${service.url}${path}`, {
      method,
      headers: { authorization: `Bearer ${ADMIN.operator}`, ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}) },
      body: form ? new URLSearchParams(form).toString() : undefined,
    });
    const text = await response.text();
    assert.equal(response.status, 200, `${method} ${path}: ${text}`);
    return text;
  };

  before(async () => {
    ({ service } = await startAdminService(database.url, { paid: 2, failing: 1 }, 'ww'));
    const forged = await service.request('POST', '/webhooks/stripe', { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' }, '{}');
    assert.equal(forged.status, 401);
    if (service.inbox.metrics instanceof DeliveryStatsRecorder) await service.inbox.metrics.flush();
    const failed = await service.db.selectFrom('webhook_events').select('id').where('status', '=', 'failed').executeTakeFirstOrThrow();
    failedId = failed.id;
    const skipped = await service.db.selectFrom('outbox').select('id').where('status', '=', 'skipped').executeTakeFirstOrThrow();
    const retried = await fetch(`${service.url}/admin/api/outbox/${skipped.id}/retry`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN.operator}`, 'content-type': 'application/json' },
      body: JSON.stringify({ reason: 'SMTP is set now' }),
    });
    assert.equal(retried.status, 200);
  });
  after(async () => {
    await service?.close();
    await database.drop();
  });

  test('the dry run names its result in words', async () => {
    const dryRun = await page('POST', `/admin/events/${failedId}/replay`, { dryRun: 'true' });
    assert.match(dryRun, /Dry run: replaying would cause\s+<strong class="mono">payment pi_ww_failing_0: new -&gt; captured<\/strong> \(would be replayed\)/);
    assert.doesNotMatch(dryRun, /would_replay/);
  });

  test("a payment's order and enrollments are labelled for people", async () => {
    const payment = await page('GET', '/admin/payments/stripe/pi_ww_paid_1');
    const labels = [...payment.matchAll(/<(dt|th)>([^<]*)<\/\1>/g)].map((match) => match[2]);
    for (const label of ['User', 'Course', 'Created (UTC)', 'Updated (UTC)', 'Enrollment', 'Order', 'Amount (minor units)']) assert.ok(labels.includes(label), label);
    assert.deepEqual(
      labels.filter((label) => /_|^[a-z]/.test(label!)),
      [],
      'no column name',
    );
  });

  test('no screen shows a code', async () => {
    const screens: Array<[string, Promise<string>]> = [
      ['overview', page('GET', '/admin')],
      ['events', page('GET', '/admin/events')],
      ['event', page('GET', `/admin/events/${failedId}`)],
      ['dry run', page('POST', `/admin/events/${failedId}/replay`, { dryRun: 'true' })],
      ['payments', page('GET', '/admin/payments')],
      ['payment', page('GET', '/admin/payments/stripe/pi_ww_paid_0')],
      ['failed and stuck', page('GET', '/admin/problems')],
      ['bulk replay count', page('POST', '/admin/bulk-replay/count', { status: 'failed', provider: 'stripe', type: '', from: '2020-01-01', to: '' })],
      ['outbox', page('GET', '/admin/outbox')],
      ['rejected', page('GET', '/admin/rejections')],
      ['reconcile', page('GET', '/admin/reconcile')],
      ['audit', page('GET', '/admin/audit')],
    ];
    for (const [name, shown] of screens) assert.deepEqual(codesShown(await shown), [], name);
    const overview = await screens[0]![1];
    assert.ok(overview.includes('invalid signature'), 'the refused delivery, in the chart legend');
    const audit = await screens.at(-1)![1];
    assert.ok(audit.includes('outbox retry'));
  });
});
