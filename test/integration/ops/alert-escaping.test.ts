import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { toDbTime } from '../../../src/db/schema.js';
import type { Inbox } from '../../../src/inbox.js';
import { providerAlertBody } from '../../../src/ops/alert.js';
import { runScheduledReconcile } from '../../../src/ops/reconcile/alerting.js';
import { handleStripeHealthEvents, STRIPE_EVENT_GENERATION_RESOLVED } from '../../../src/ops/reconcile/stripe-health.js';
import { runStuckCheck } from '../../../src/ops/schedule.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { seedEvents, startSink } from '../../support/events.js';
import { FakeProviderApis, type StripeApiEvent } from '../../support/fake-provider-apis.js';
import { serviceInbox, testConfig } from '../../support/harness.js';
import { stripePaymentEvent } from '../../support/signing.js';

/**
 * Provider data and error texts in an alert, written to make Slack notify everyone, mention a user or
 * show a link under other words. Slack shows them as text only when `<`, `>` and `&` come escaped.
 */
const HOSTILE = '<!channel> <@U123> <http://evil.example|click here> &amp;';
const ESCAPED = '&lt;!channel&gt; &lt;@U123&gt; &lt;http://evil.example|click here&gt; &amp;amp;';

/** Every text of the body, with nothing Slack would read as markup in it, and the hostile text shown as it is. */
function assertEscaped(body: unknown, what: string): string {
  const texts: string[] = [];
  const collect = (value: unknown) => {
    if (typeof value === 'string') texts.push(value);
    else if (value && typeof value === 'object') Object.values(value).forEach(collect);
  };
  collect(body);
  const all = texts.join('\n');
  assert.doesNotMatch(all, /[<>]/, `${what}: no < or > reaches Slack`);
  assert.ok(all.includes(ESCAPED), `${what}: the hostile text shown escaped, in ${all}`);
  assert.doesNotMatch(all.replace(/&(amp|lt|gt);/g, ''), /&/, `${what}: every & escaped`);
  return all;
}

test('provider alerts: every text escaped for Slack', () => {
  assertEscaped(providerAlertBody([{ provider: 'stripe', rule: 'silent', message: HOSTILE }], `source ${HOSTILE}`), 'provider alert');
});

const databases = await createTestDatabases();

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`alerts escape provider data and error texts (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let apis: FakeProviderApis;
    let inbox: Inbox;
    let sink: Awaited<ReturnType<typeof startSink>>;
    let env: Record<string, string>;

    before(async () => {
      db = database as TestDatabase;
      apis = await FakeProviderApis.start();
      sink = await startSink();
      env = { ALERT_WEBHOOK_URL: sink.url };
      inbox = serviceInbox(testConfig(db.url, env));
      await inbox.store.migrate();
    });
    after(async () => {
      await inbox?.stop(0);
      await apis?.close();
      await sink?.close();
      await db?.drop();
    });

    const lastBody = () => sink.bodies.at(-1);

    test('the stuck check: event ids, types, error texts and outbox keys', async () => {
      await seedEvents(inbox.database, [
        { event_id: `evt_${HOSTILE}`, event_type: HOSTILE, status: 'failed', attempts: 10, last_error: `Error: ${HOSTILE}`, next_attempt_at: null },
      ]);
      const now = toDbTime(new Date());
      await inbox.database
        .insertInto('outbox')
        .values({
          idempotency_key: `fulfilment:stripe:${HOSTILE}`,
          kind: 'fulfilment',
          payload: '{}',
          status: 'failed',
          attempts: 10,
          last_error: `HTTP 500: ${HOSTILE}`,
          created_at: now,
        })
        .execute();
      const sent = sink.bodies.length;
      await runStuckCheck(testConfig(db.url, env).operations, inbox, 'scheduled check');
      assert.equal(sink.bodies.length, sent + 1);
      const text = assertEscaped(lastBody(), 'stuck alert');
      assert.ok(text.includes(`fulfilment:stripe:${ESCAPED}`), 'the outbox key');
      assert.ok(text.includes(`HTTP 500: ${ESCAPED}`), 'its error');
      assert.ok(text.includes(`Error: ${ESCAPED}`), "the event's error");
    });

    test("Stripe's health event: its id", async () => {
      const eventId = `evt_health_${HOSTILE}`;
      await seedEvents(inbox.database, [
        { event_id: eventId, event_type: STRIPE_EVENT_GENERATION_RESOLVED, payload: JSON.stringify({ id: eventId, type: STRIPE_EVENT_GENERATION_RESOLVED, data: {} }) },
      ]);
      // No STRIPE_API_KEY: the run is recorded failed, after the alert.
      assert.equal(await handleStripeHealthEvents(testConfig(db.url, env).operations, inbox), 1);
      assertEscaped(lastBody(), 'health alert');
    });

    test('reconcile: the missing event ids, types and payment ids', async () => {
      const created = Math.floor(Date.now() / 1000) - 60;
      apis.stripeEvents.push({ ...(stripePaymentEvent(`evt_missing_${HOSTILE}`, 'payment_intent.succeeded', `pi_${HOSTILE}`) as StripeApiEvent), created });
      const settings = testConfig(db.url, { ...env, ...apis.env() }).operations.reconcile;
      const report = await runScheduledReconcile(settings, sink.url, inbox, { since: new Date((created - 3600) * 1000), until: new Date() });
      assert.equal(report.found, 1);
      const text = assertEscaped(lastBody(), 'reconcile alert');
      assert.ok(text.includes(`payment pi_${ESCAPED}`), text);
    });
  });
}
