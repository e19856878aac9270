import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { ADMIN, HOSTILE, startAdminService } from '../../support/admin.js';
import { launchBrowser, screenshot } from '../../support/browser.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import type { Harness } from '../../support/harness.js';
import { toDbTime } from '../../../src/db/schema.js';

const database = (await createTestDatabase('sqlite')) as TestDatabase;
const browserOrSkip = await launchBrowser();

describe('admin dashboard in a browser', { skip: 'skip' in browserOrSkip && browserOrSkip.skip }, () => {
  const browser = browserOrSkip as Browser;
  let service: Harness;
  let context: BrowserContext;
  let page: Page;
  /** Script that ran although it should not have: set by hostile payload strings if they ever execute. */
  const dialogs: string[] = [];

  const signIn = async (target: Page, token: string) => {
    await target.goto(`${service.url}/admin`);
    assert.match(target.url(), /\/admin\/sign-in$/, 'sent to sign in first');
    if (token === ADMIN.operator) await screenshot(target, 'sign-in');
    await target.fill('input[name="token"]', token);
    await target.click('button[type="submit"]');
    await target.waitForURL(/\/admin$/);
  };

  before(async () => {
    ({ service } = await startAdminService(database.url, { paid: 4, failing: 2 }, 'br'));
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.accept();
    });
  });
  after(async () => {
    await browser?.close();
    await service?.close();
    await database.drop();
  });

  test('sign in, find an event by payment id, open it and its payment', async () => {
    await signIn(page, ADMIN.operator);
    assert.equal(await page.textContent('h1'), 'Overview');
    await page.waitForSelector('.chart svg');
    await screenshot(page, 'overview');

    await page.click('nav >> text=Events');
    await page.fill('input[name="paymentId"]', 'pi_br_paid_1');
    await page.click('form.filters button[type="submit"]');
    const rows = page.locator('table tbody tr');
    assert.equal(await rows.count(), 1);
    await screenshot(page, 'events');
    await rows.first().locator('a').first().click();
    await page.waitForURL(/\/admin\/events\/\d+$/);
    assert.match((await page.textContent('h1')) ?? '', /evt_br_paid_1/);
    await screenshot(page, 'event-detail');

    await page.click('dd a[href^="/admin/payments/stripe/pi_br_paid_1"]');
    await page.waitForURL(/\/admin\/payments\/stripe\/pi_br_paid_1$/);
    assert.match((await page.textContent('main')) ?? '', /captured/);
    await screenshot(page, 'payment');
  });

  test('a hostile payload renders as text and runs nothing', async () => {
    await page.goto(`${service.url}/admin/events?eventId=evt_br_paid_0`);
    await page.locator('table tbody tr a').first().click();
    await page.waitForURL(/\/admin\/events\/\d+$/);
    const raw = (await page.textContent('#payload-raw')) ?? '';
    const asJson = (value: string) => JSON.stringify(value).slice(1, -1);
    assert.ok(raw.includes(asJson(HOSTILE.name)) && raw.includes(asJson(HOSTILE.note)) && raw.includes(asJson(HOSTILE.url)), 'the strings are shown, as text');
    assert.equal(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned), undefined, 'no script of the payload ran');
    assert.equal(await page.locator('main script, main img, a[href^="javascript:"]').count(), 0);
    assert.deepEqual(dialogs, []);
    await screenshot(page, 'hostile-payload');
  });

  test('the payments list: from the navigation, filtered by state, each payment linked to its page', async () => {
    await page.goto(`${service.url}/admin`);
    await page.click('nav >> text=Payments');
    await page.waitForURL(/\/admin\/payments$/);
    assert.equal(await page.textContent('h1'), 'Payments');
    await page.selectOption('select[name="status"]', 'captured');
    await page.click('form.filters button[type="submit"]');
    await page.waitForURL(/status=captured/);
    const rows = page.locator('table.payments tbody tr');
    assert.equal(await rows.count(), 4, 'the paid ones: the failing events made no payment');
    await screenshot(page, 'payments');
    await rows.first().locator('a').click();
    await page.waitForURL(/\/admin\/payments\/stripe\/pi_br_paid_\d$/);
    assert.match((await page.textContent('main')) ?? '', /captured/);
    assert.deepEqual(dialogs, []);
  });

  test('dry run, then replay a failed event; the audit row shows who and why', async () => {
    await page.goto(`${service.url}/admin/problems`);
    await screenshot(page, 'failed-and-stuck');
    await page.locator('table tbody tr a[href^="/admin/events/"]').first().click();
    await page.waitForURL(/\/admin\/events\/\d+$/);
    await page.click('#dry-run');
    assert.match((await page.textContent('.notice')) ?? '', /Dry run: replaying would cause\s+payment pi_br_failing_\d: new -> captured \(would be replayed\)/);
    await screenshot(page, 'replay-dry-run');
    await page.fill('input[name="reason"]', 'fulfilment restored (browser test)');
    await page.click('#confirm-replay');
    await page.waitForURL(/message=/);
    assert.match((await page.textContent('p.notice')) ?? '', /Replayed: failed/);
    const audit = (await page.textContent('table.audit')) ?? '';
    assert.match(audit, /alice[\s\S]*operator[\s\S]*replay[\s\S]*fulfilment restored \(browser test\)/);
    assert.equal(dialogs.length, 1, 'the confirm dialog asked once');
    // The timeline: the first attempt, the replay and the attempt it ran, each with its worker and error.
    const steps: string[][] = [];
    for (const row of await page.locator('table.timeline tbody tr').all()) steps.push(await row.locator('td').allTextContents());
    assert.deepEqual(
      steps.map((cells) => cells[2]),
      ['received', 'attempt 1: gave up', 'replay', 'attempt 1: gave up', 'replay finished'],
    );
    for (const attempt of steps.filter((cells) => cells[2]!.startsWith('attempt'))) {
      assert.match(attempt[3]!, /:\d+:/, 'the worker (host:pid:...)');
      assert.match(attempt[4]!, /fulfilment backend down \(test\)/);
      assert.ok(attempt[1]! >= attempt[0]!, 'an end after its start');
    }
    await screenshot(page, 'event-timeline');
  });

  test('reconcile runs: a page of their own, from the nav, for any signed-in role', async () => {
    const at = (hour: number) => toDbTime(new Date(Date.UTC(2026, 11, 3, hour)));
    await service.db
      .insertInto('reconcile_runs')
      .values([
        {
          run_key: 'br-1',
          provider: 'stripe',
          window_start: at(0),
          window_end: at(1),
          dry_run: 0,
          status: 'finished',
          found: 3,
          recorded: 3,
          errors: 0,
          cursor: null,
          last_error: null,
          started_at: at(1),
          finished_at: at(1),
        },
        {
          run_key: 'br-2',
          provider: 'razorpay',
          window_start: at(1),
          window_end: at(2),
          dry_run: 0,
          status: 'failed',
          found: 0,
          recorded: 0,
          errors: 1,
          cursor: null,
          last_error: '<img src=x onerror="window.__pwned = 4"> 503 from the API',
          started_at: at(2),
          finished_at: at(2),
        },
      ])
      .execute();
    await page.goto(`${service.url}/admin`);
    await page.click('nav >> text=Reconcile');
    await page.waitForURL(/\/admin\/reconcile$/);
    assert.equal(await page.textContent('h1'), 'Reconcile runs');
    const rows = await page.locator('table.reconcile-runs tbody tr').allTextContents();
    assert.equal(rows.length, 2);
    assert.match(rows[0]!, /razorpay[\s\S]*failed[\s\S]*503 from the API/, 'newest first, its error as text');
    assert.match(rows[1]!, /stripe[\s\S]*finished/);
    assert.equal(await page.locator('main img').count(), 0);
    assert.equal(await page.evaluate(() => (globalThis as unknown as { __pwned?: number }).__pwned), undefined);
    await screenshot(page, 'reconcile-runs');
  });

  test('bulk replay: the count first, then progress', async () => {
    await page.goto(`${service.url}/admin/problems`);
    await page.click('#bulk-count');
    assert.equal(await page.textContent('#bulk-total'), '2');
    await screenshot(page, 'bulk-replay-count');
    await page.fill('input[name="reason"]', 'bulk from the browser');
    await page.click('#bulk-start');
    await page.waitForURL(/\/admin\/bulk-replay\/[\w-]+$/);
    await service.waitFor('the bulk replay to finish', async () => {
      await page.reload();
      return (await page.textContent('#bulk-state')) !== 'running';
    });
    assert.equal(await page.textContent('#bulk-state'), 'finished');
    await screenshot(page, 'bulk-replay-progress');
  });

  test('retry an outbox row', async () => {
    await page.goto(`${service.url}/admin/outbox?status=skipped`);
    await page.locator('input[name="reason"]').first().fill('SMTP is configured now');
    await page.locator('button:has-text("Retry")').first().click();
    await page.waitForURL(/message=/);
    assert.match((await page.textContent('p.notice')) ?? '', /Outbox row \d+ is due again/);
    await screenshot(page, 'outbox');
    await page.goto(`${service.url}/admin/audit`);
    assert.match((await page.textContent('table.audit')) ?? '', /outbox retry/);
    await screenshot(page, 'audit');
    await page.goto(`${service.url}/admin/rejections`);
    await screenshot(page, 'rejected-deliveries');
  });

  test('a viewer sees no replay button and is refused (403) when posting one anyway', async () => {
    const viewerContext = await browser.newContext();
    const viewer = await viewerContext.newPage();
    await signIn(viewer, ADMIN.viewer);
    await viewer.goto(`${service.url}/admin/events?status=failed`);
    const link = viewer.locator('table tbody tr a[href^="/admin/events/"]').first();
    const href = (await link.getAttribute('href'))!;
    await link.click();
    assert.equal(await viewer.locator('#dry-run, #confirm-replay').count(), 0);
    assert.match((await viewer.textContent('main')) ?? '', /needs the operator role/);
    // The CSP lets no page script fetch, so the request is made with the viewer's session directly.
    const response = await viewerContext.request.post(`${service.url}/admin/api${href.replace('/admin', '')}/replay`, {
      headers: { origin: service.url },
      data: { dryRun: false, reason: 'viewer tries' },
    });
    const status = response.status();
    assert.equal(status, 403);
    await viewerContext.close();
  });

  test('a cross-origin POST with the session is refused', async () => {
    const response = await context.request.post(`${service.url}/admin/api/events/1/replay`, {
      headers: { origin: 'https://evil.example', 'content-type': 'application/json' },
      data: { dryRun: true },
      maxRedirects: 0,
    });
    assert.equal(response.status(), 403);
    const same = await context.request.post(`${service.url}/admin/api/events/1/replay`, { headers: { origin: service.url }, data: { dryRun: true } });
    assert.equal(same.status(), 200, 'the same session from our own Origin is fine');
  });
});
