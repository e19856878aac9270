import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createInbox } from '../../../src/app.js';
import type { Inbox } from '../../../src/inbox.js';
import { findStuck } from '../../../src/ops/stuck.js';
import { cli } from '../../support/cli.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { minutesAgo, seedEvents, startSink } from '../../support/events.js';
import { Harness, testConfig, waitFor } from '../../support/harness.js';

const databases = await createTestDatabases();
const THIRTY_MINUTES = 30 * 60_000;

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`stuck events: report, exit code, alerts (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let inbox: Inbox;
    let sink: Awaited<ReturnType<typeof startSink>>;
    let env: Record<string, string>;

    before(async () => {
      db = database as TestDatabase;
      inbox = createInbox(testConfig(db.url));
      await inbox.store.migrate();
      sink = await startSink();
      env = { DATABASE_URL: db.url };
    });
    after(async () => {
      await inbox?.store.close();
      await sink?.close();
      await db?.drop();
    });

    test('nothing stuck: an empty report, and exit code 0', async () => {
      await seedEvents(inbox.store.db, [{ event_id: 'evt_fine', created_at: minutesAgo(600) }]);
      assert.equal((await findStuck(inbox.store.db, inbox.clock, { olderThanMs: THIRTY_MINUTES })).total, 0);
      if (backend === 'sqlite') return; // The command's wiring is the same over both stores.
      const result = await cli(['stuck'], env);
      assert.equal(result.code, 0, result.output);
      assert.match(result.output, /no stuck events/);
    });

    test('finds each kind, and only those', async () => {
      await seedEvents(inbox.store.db, [
        { event_id: 'evt_lease_expired', status: 'processing', lease_owner: 'dead-worker', lease_token: 't1', lease_expires_at: minutesAgo(1), created_at: minutesAgo(5) },
        { event_id: 'evt_lease_live', status: 'processing', lease_owner: 'busy-worker', lease_token: 't2', lease_expires_at: minutesAgo(-1), created_at: minutesAgo(5) },
        { event_id: 'evt_failed', status: 'failed', attempts: 10, last_error: 'Error: fulfilment backend down', next_attempt_at: null, created_at: minutesAgo(90) },
        { event_id: 'evt_old_received', status: 'received', attempts: 0, next_attempt_at: minutesAgo(120), created_at: minutesAgo(120) },
        { event_id: 'evt_new_received', status: 'received', attempts: 0, next_attempt_at: minutesAgo(1), created_at: minutesAgo(1) },
      ]);
      const report = await findStuck(inbox.store.db, inbox.clock, { olderThanMs: THIRTY_MINUTES });
      assert.deepEqual(report.counts, { expired_lease: 1, failed: 1, old_received: 1 });
      const byKind = Object.fromEntries(report.events.map((e) => [e.kind, e]));
      assert.equal(byKind.expired_lease?.eventId, 'evt_lease_expired');
      assert.equal(byKind.expired_lease?.leaseOwner, 'dead-worker');
      assert.equal(byKind.failed?.eventId, 'evt_failed');
      assert.equal(byKind.failed?.attempts, 10);
      assert.equal(byKind.failed?.lastError, 'Error: fulfilment backend down');
      assert.equal(byKind.old_received?.eventId, 'evt_old_received');

      const longer = await findStuck(inbox.store.db, inbox.clock, { olderThanMs: 3 * 60 * 60_000 });
      assert.deepEqual(longer.counts, { expired_lease: 1, failed: 1, old_received: 0 }, 'the threshold applies to received events');
    });

    // The command's wiring is the same over both stores: checked once.
    if (backend === 'mysql')
      test('the command exits 1 when anything is found, and --alert posts a Slack-compatible summary', async () => {
        const json = await cli(['stuck', '--older-than', '30m', '--json'], env);
        assert.equal(json.code, 1, json.output);
        assert.equal((JSON.parse(json.output) as { total: number }).total, 3);

        const alerted = await cli(['stuck', '--alert'], { ...env, ALERT_WEBHOOK_URL: sink.url });
        assert.equal(alerted.code, 1, alerted.output);
        assert.match(alerted.output, /alert sent/);
        assert.equal(sink.bodies.length, 1);
        const body = sink.bodies[0] as { text: string; blocks: Array<{ type: string; text: { text: string } }> };
        assert.match(body.text, /3 stuck events: 1 processing with an expired lease, 1 failed, 1 received and never processed for over 30m/);
        assert.equal(body.blocks[0]?.type, 'section');
        assert.match(body.blocks[1]!.text.text, /failed stripe evt_failed \(payment_intent\.succeeded\), attempts 10 — Error: fulfilment backend down/);

        const noUrl = await cli(['stuck', '--alert'], env);
        assert.equal(noUrl.code, 2);
        assert.match(noUrl.output, /--alert needs ALERT_WEBHOOK_URL/);
      });

    test('the service runs the check on its cron schedule and alerts', async () => {
      const before = sink.bodies.length;
      const service = await Harness.start(db.url, { STUCK_CHECK_CRON: '* * * * * *', ALERT_WEBHOOK_URL: sink.url });
      try {
        await waitFor('a scheduled alert', () => sink.bodies.length > before, 5000);
      } finally {
        await service.close();
      }
      assert.match((sink.bodies[before] as { text: string }).text, /^webhook-inbox \(scheduled check\): \d+ stuck events/);
    });
  });
}
