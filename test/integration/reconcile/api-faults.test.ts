import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ReconcileSettings } from '../../../src/config/settings.js';
import { toDbTime } from '../../../src/db/schema.js';
import type { Inbox } from '../../../src/inbox.js';
import { reconcile, type ReconcileReport } from '../../../src/ops/reconcile/reconcile.js';
import { ReconcileRuns } from '../../../src/ops/reconcile/runs.js';
import { handleStripeHealthEvents, STRIPE_EVENT_GENERATION_RESOLVED } from '../../../src/ops/reconcile/stripe-health.js';
import { cli } from '../../support/cli.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { seedEvents, startSink } from '../../support/events.js';
import { FakeProviderApis, type StripeApiEvent } from '../../support/fake-provider-apis.js';
import { Harness, serviceInbox, testConfig, waitFor } from '../../support/harness.js';
import { stripePaymentEvent } from '../../support/signing.js';

/** Provider API answers that are wrong in every way the issue names: bounded, reported, never a crash. */
const databases = await createTestDatabases();
const FAST = { backoffBaseMs: 10, backoffCapMs: 200, timeoutMs: 2000, maxAttempts: 3, maxBytes: 64 * 1024 };
const NOW = Math.floor(Date.now() / 1000);

const event = (i: number): StripeApiEvent => ({ ...(stripePaymentEvent(`evt_f${i}`, 'payment_intent.succeeded', `pi_F${i}`) as StripeApiEvent), created: NOW - 60 - i });

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`reconcile: bad provider answers, the lock, the command (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let apis: FakeProviderApis;
    let inbox: Inbox;
    let settings: ReconcileSettings;
    const window = () => ({ since: new Date((NOW - 3600) * 1000), until: new Date() });
    const stripeOnly = (overrides: Partial<ReconcileSettings> = {}) => ({ ...settings, ...overrides });
    const run = (overrides: Partial<ReconcileSettings> = {}, dryRun = true) =>
      reconcile({ window: window(), provider: 'stripe', dryRun }, { inbox, settings: stripeOnly(overrides), apiClient: FAST });
    const only = (report: ReconcileReport) => report.runs[0]!;

    before(async () => {
      db = database as TestDatabase;
      apis = await FakeProviderApis.start();
      apis.stripeEvents.push(event(1), event(2));
      const config = testConfig(db.url, apis.env());
      settings = config.operations.reconcile;
      inbox = serviceInbox(config);
      await inbox.store.migrate();
    });
    after(async () => {
      await inbox?.stop(0);
      await apis?.close();
      await db?.drop();
    });

    for (const [name, fault, reason] of [
      ['malformed JSON', { kind: 'malformed' }, /not JSON/],
      ['an oversized answer', { kind: 'oversized', bytes: 100 * 1024 }, /larger than 65536 bytes/],
      ['a 401 (wrong key)', { kind: 'status', status: 401, body: '{"error":{"message":"Invalid API Key provided: rk_test_****"}}' }, /answered 401; check the API key/],
    ] as const) {
      test(`${name} fails the provider's run with a clear message, at once`, async () => {
        apis.fail('/v1/events', fault);
        const report = await run();
        assert.equal(only(report).status, 'failed');
        assert.match(only(report).lastError!, reason);
        assert.doesNotMatch(only(report).lastError!, /rk_test_reconcile/, 'the key is never in a message');
      });
    }

    test('a truncated answer is tried again; one that stays truncated fails after the attempts allowed', async () => {
      apis.fail('/v1/events', { kind: 'truncated' });
      assert.equal(only(await run()).found, 2, 'one cut-off answer, then a whole one');
      apis.fail('/v1/events', { kind: 'truncated' }, FAST.maxAttempts);
      const report = await run();
      assert.equal(only(report).status, 'failed');
      assert.match(only(report).lastError!, /(cut off|no answer) .*after 3 attempts/);
    });

    test('pagination that never ends stops at RECONCILE_MAX_PAGES', async () => {
      apis.fail('/v1/events', { kind: 'endless' });
      const report = await run({ maxPages: 5 });
      apis.faults.length = 0;
      assert.equal(only(report).status, 'failed');
      assert.match(only(report).lastError!, /more than RECONCILE_MAX_PAGES \(5\) pages/);
    });

    test('an event of the answer that a delivery could not be is an error of the run; one whose id is too long is kept under its digest, as a delivery of it would be', async () => {
      apis.stripeEvents.push({ ...event(3), id: `evt_${'x'.repeat(300)}` }, { ...event(4), id: 'not_an_event_id' });
      try {
        const report = await run();
        assert.equal(only(report).found, 3);
        assert.equal(only(report).errors, 1);
        assert.match(only(report).lastError!, /does not start with evt_/);
      } finally {
        apis.stripeEvents.splice(2);
      }
    });

    test('a provider without its API key is not reconciled, and says which variable is missing', async () => {
      const report = await reconcile({ window: window(), dryRun: true }, { inbox, settings: stripeOnly({ apis: { ...settings.apis, stripe: null } }), apiClient: FAST });
      assert.deepEqual(
        report.disabled.map((d) => d.provider),
        ['stripe'],
      );
      assert.match(report.disabled[0]!.reason, /STRIPE_API_KEY is not set/);
      await assert.rejects(
        reconcile({ window: window(), provider: 'stripe' }, { inbox, settings: stripeOnly({ apis: { ...settings.apis, stripe: null } }) }),
        /cannot reconcile stripe: STRIPE_API_KEY is not set/,
      );
    });

    test('one run at a time: a live lock refuses a second run; an expired one (its holder died) is taken over', async () => {
      const later = toDbTime(new Date(Date.now() + 60_000));
      await inbox.database.insertInto('operation_locks').values({ name: 'reconcile', owner: 'other-host:123', expires_at: later }).execute();
      await assert.rejects(run({}, false), /another reconcile run holds the lock \(other-host:123/);
      await inbox.database
        .updateTable('operation_locks')
        .set({ expires_at: toDbTime(new Date(Date.now() - 1000)) })
        .execute();
      const report = await run({}, false);
      assert.equal(only(report).status, 'finished');
      assert.equal(only(report).recorded, 2);
      assert.equal((await inbox.database.selectFrom('operation_locks').select('id').execute()).length, 0, 'released after the run');
    });

    test('a Stripe event_generation_failure.resolved event: an alert, and Stripe reconciled over the window before it, once', async () => {
      apis.stripeEvents.push(event(7));
      const sink = await startSink();
      try {
        const resolved = new Date();
        await seedEvents(inbox.database, [
          {
            event_id: 'evt_health_1',
            event_type: STRIPE_EVENT_GENERATION_RESOLVED,
            payload: JSON.stringify({ id: 'evt_health_1', object: 'v2.core.event', type: STRIPE_EVENT_GENERATION_RESOLVED, data: { resolved_at: resolved.toISOString() } }),
          },
        ]);
        const operations = testConfig(db.url, { ...apis.env(), ALERT_WEBHOOK_URL: sink.url }).operations;
        assert.equal(await handleStripeHealthEvents(operations, inbox), 1);
        assert.match((sink.bodies[0] as { text: string }).text, /Stripe reports it could not generate events for a while \(evt_health_1\)/);
        const run = await new ReconcileRuns(inbox.database, inbox.clock).byKey('stripe-health:evt_health_1');
        assert.equal(run?.status, 'finished');
        assert.equal(run?.windowEnd.getTime(), resolved.getTime());
        assert.equal(run?.recorded, 1, 'the one event of the window not held yet');
        assert.ok(await inbox.store.findEvent('stripe', 'evt_f7'));
        assert.equal(await handleStripeHealthEvents(operations, inbox), 0, 'handled once');
        assert.equal(sink.bodies.length, 1);
      } finally {
        await sink.close();
      }
    });

    test('the service reconciles on RECONCILE_CRON, and alerts when events were missing', async () => {
      apis.stripeEvents.push(event(8));
      const sink = await startSink();
      const service = await Harness.start(db.url, { ...apis.env(), RECONCILE_CRON: '* * * * * *', ALERT_CHECK_CRON: 'off', ALERT_WEBHOOK_URL: sink.url });
      try {
        await waitFor('a scheduled reconcile alert', () => sink.bodies.length > 0, 20_000);
        assert.match((sink.bodies[0] as { text: string }).text, /^webhook-inbox \(scheduled reconcile\): reconcile found \d+ missing events? \(stripe \d+/);
        assert.ok(await service.inbox.store.findEvent('stripe', 'evt_f8'));
      } finally {
        await service.close();
        await sink.close();
      }
    });

    if (backend === 'mysql')
      test('the command exits 1 and alerts when events were missing; --dry-run exits 1 and records nothing; bad usage exits 2', async () => {
        apis.stripeEvents.push(event(5));
        const sink = await startSink();
        try {
          const env = { DATABASE_URL: db.url, ...apis.env(), ALERT_WEBHOOK_URL: sink.url };
          const dry = await cli(['reconcile', '--provider', 'stripe', '--dry-run', '--since', '2h'], env);
          assert.equal(dry.code, 1, dry.output);
          assert.match(dry.output, /stripe: .*: 1 missing, 0 errors/);
          assert.match(dry.output, /evt_f5\s+payment_intent\.succeeded\s+pi_F5\s+captured/);
          assert.equal(sink.bodies.length, 0, 'a dry run alerts nobody');

          const real = await cli(['reconcile', '--provider', 'stripe', '--since', '2h', '--json'], env);
          assert.equal(real.code, 1, real.output);
          // The output holds stderr too: the alert's log line, before stdout's JSON.
          const json = real.output.slice(real.output.indexOf('{\n'));
          const report = JSON.parse(json.slice(0, json.indexOf('\n}\n') + 2)) as ReconcileReport;
          assert.equal(report.found, 1);
          assert.equal(sink.bodies.length, 1);
          assert.match((sink.bodies[0] as { text: string }).text, /reconcile found 1 missing event \(stripe 1\); webhooks are being lost/);

          const again = await cli(['reconcile', '--provider', 'stripe', '--since', '2h'], env);
          assert.equal(again.code, 0, again.output);
          const usage = await cli(['reconcile', '--provider', 'paypal'], env);
          assert.equal(usage.code, 2);
          assert.match(usage.output, /expected one of stripe, razorpay, payu/);
        } finally {
          await sink.close();
        }
      });
  });
}
