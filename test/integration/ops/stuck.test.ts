import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Inbox } from '../../../src/inbox.js';
import { findStuck, summarizeStuck } from '../../../src/ops/stuck.js';
import type { OutboxStatus } from '../../../src/db/schema.js';
import { cli } from '../../support/cli.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { minutesAgo, seedEvents, startSink } from '../../support/events.js';
import { Harness, serviceInbox, testConfig, waitFor } from '../../support/harness.js';

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
      inbox = serviceInbox(testConfig(db.url));
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
      await seedEvents(inbox.database, [{ event_id: 'evt_fine', created_at: minutesAgo(600) }]);
      assert.equal((await findStuck(inbox.database, inbox.clock, { olderThanMs: THIRTY_MINUTES, outboxOlderThanMs: THIRTY_MINUTES })).total, 0);
      if (backend === 'sqlite') return; // The command's wiring is the same over both stores.
      const result = await cli(['stuck'], env);
      assert.equal(result.code, 0, result.output);
      assert.match(result.output, /no stuck events/);
    });

    test('finds each kind, and only those', async () => {
      await seedEvents(inbox.database, [
        { event_id: 'evt_lease_expired', status: 'processing', lease_owner: 'dead-worker', lease_token: 't1', lease_expires_at: minutesAgo(1), created_at: minutesAgo(5) },
        { event_id: 'evt_lease_live', status: 'processing', lease_owner: 'busy-worker', lease_token: 't2', lease_expires_at: minutesAgo(-1), created_at: minutesAgo(5) },
        { event_id: 'evt_failed', status: 'failed', attempts: 10, last_error: 'Error: fulfilment backend down', next_attempt_at: null, created_at: minutesAgo(90) },
        { event_id: 'evt_old_received', status: 'received', attempts: 0, next_attempt_at: minutesAgo(120), created_at: minutesAgo(120) },
        { event_id: 'evt_new_received', status: 'received', attempts: 0, next_attempt_at: minutesAgo(1), created_at: minutesAgo(1) },
      ]);
      const report = await findStuck(inbox.database, inbox.clock, { olderThanMs: THIRTY_MINUTES, outboxOlderThanMs: THIRTY_MINUTES });
      assert.deepEqual(report.counts, { expired_lease: 1, failed: 1, old_received: 1 });
      const byKind = Object.fromEntries(report.events.map((e) => [e.kind, e]));
      assert.equal(byKind.expired_lease?.eventId, 'evt_lease_expired');
      assert.equal(byKind.expired_lease?.leaseOwner, 'dead-worker');
      assert.equal(byKind.failed?.eventId, 'evt_failed');
      assert.equal(byKind.failed?.attempts, 10);
      assert.equal(byKind.failed?.lastError, 'Error: fulfilment backend down');
      assert.equal(byKind.old_received?.eventId, 'evt_old_received');

      const longer = await findStuck(inbox.database, inbox.clock, { olderThanMs: 3 * 60 * 60_000, outboxOlderThanMs: THIRTY_MINUTES });
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

const outboxDatabases = await createTestDatabases();

for (const backend of STORE_BACKENDS) {
  const database = outboxDatabases[backend];
  // A payment whose fulfilment failed is a customer who paid and got nothing: the check must say so.
  describe(`stuck outbox rows: report, exit code, alerts (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let inbox: Inbox;
    let sink: Awaited<ReturnType<typeof startSink>>;
    const ONE_HOUR = 60 * 60_000;

    before(async () => {
      db = database as TestDatabase;
      inbox = serviceInbox(testConfig(db.url));
      await inbox.store.migrate();
      sink = await startSink();
      const row = (
        key: string,
        status: OutboxStatus,
        createdMinutesAgo: number,
        extra: { attempts?: number; last_error?: string | null; next_attempt_at?: string | null } = {},
      ) => ({
        idempotency_key: key,
        kind: key.split(':')[0] === 'receipt' ? 'receipt_email' : 'fulfilment',
        payload: '{}',
        status,
        attempts: extra.attempts ?? 1,
        last_error: extra.last_error ?? null,
        next_attempt_at: extra.next_attempt_at ?? null,
        created_at: minutesAgo(createdMinutesAgo),
      });
      await inbox.database
        .insertInto('outbox')
        .values([
          row('fulfilment:stripe:pi_unfulfilled', 'failed', 120, { attempts: 10, last_error: 'HTTP 500: fulfilment backend down' }),
          row('receipt:stripe:pi_slow', 'pending', 90, { attempts: 6, last_error: 'fetch failed: connect ECONNREFUSED 10.0.0.9:587', next_attempt_at: minutesAgo(-10) }),
          row('fulfilment:stripe:pi_fresh', 'pending', 1, { attempts: 0, next_attempt_at: minutesAgo(1) }),
          row('fulfilment:stripe:pi_done', 'sent', 300),
          row('receipt:stripe:pi_no_smtp', 'skipped', 300),
        ])
        .execute();
    });
    after(async () => {
      await inbox?.store.close();
      await sink?.close();
      await db?.drop();
    });

    test('failed rows, and rows pending longer than the outbox threshold; not fresh, sent or skipped ones', async () => {
      const report = await findStuck(inbox.database, inbox.clock, { olderThanMs: THIRTY_MINUTES, outboxOlderThanMs: ONE_HOUR });
      assert.deepEqual(report.outboxCounts, { failed: 1, overdue: 1 });
      assert.equal(report.total, 2);
      assert.deepEqual(
        report.outbox.map((r) => [r.state, r.idempotencyKey, r.status, r.attempts, r.lastError]),
        [
          ['failed', 'fulfilment:stripe:pi_unfulfilled', 'failed', 10, 'HTTP 500: fulfilment backend down'],
          ['overdue', 'receipt:stripe:pi_slow', 'pending', 6, 'fetch failed: connect ECONNREFUSED 10.0.0.9:587'],
        ],
      );
      assert.equal(summarizeStuck(report), '2 stuck outbox rows: 1 failed, 1 pending for over 1h');
      const patient = await findStuck(inbox.database, inbox.clock, { olderThanMs: THIRTY_MINUTES, outboxOlderThanMs: 3 * ONE_HOUR });
      assert.deepEqual(patient.outboxCounts, { failed: 1, overdue: 0 }, 'the threshold applies to pending rows; a failed one always counts');
    });

    // The command's wiring is the same over both stores: checked once.
    if (backend === 'mysql')
      test('the command lists them in a table and exits 1; --outbox-older-than and STUCK_CHECK_OUTBOX_OLDER_THAN set the threshold', async () => {
        const listed = await cli(['stuck'], { DATABASE_URL: db.url });
        assert.equal(listed.code, 1, listed.output);
        assert.match(listed.output, /^2 stuck outbox rows: 1 failed, 1 pending for over 1h \(received events count after 30m, pending outbox rows after 1h\)$/m);
        assert.match(listed.output, /^OUTBOX +ID +KIND +KEY +ATTEMPTS +WRITTEN \(UTC\) +NEXT ATTEMPT +LAST ERROR$/m);
        assert.match(listed.output, /^failed +\d+ +fulfilment +fulfilment:stripe:pi_unfulfilled +10 .* none left: outbox retry +HTTP 500: fulfilment backend down$/m);
        assert.match(listed.output, /^pending too long +\d+ +receipt_email +receipt:stripe:pi_slow +6 /m);

        const [flag, variable] = await Promise.all([
          cli(['stuck', '--outbox-older-than', '3h', '--json'], { DATABASE_URL: db.url }),
          cli(['stuck', '--json'], { DATABASE_URL: db.url, STUCK_CHECK_OUTBOX_OLDER_THAN: '3h' }),
        ]);
        for (const { code, output } of [flag, variable]) {
          assert.equal(code, 1, output);
          const report = JSON.parse(output) as { outboxOlderThanMs: number; outboxCounts: Record<string, number>; outbox: Array<{ idempotencyKey: string }> };
          assert.equal(report.outboxOlderThanMs, 3 * ONE_HOUR);
          assert.deepEqual(report.outboxCounts, { failed: 1, overdue: 0 });
          assert.deepEqual(
            report.outbox.map((r) => r.idempotencyKey),
            ['fulfilment:stripe:pi_unfulfilled'],
          );
        }
      });

    test('the scheduled check alerts about them', async () => {
      const service = await Harness.start(db.url, { STUCK_CHECK_CRON: '* * * * * *', ALERT_WEBHOOK_URL: sink.url });
      try {
        await waitFor('a scheduled alert', () => sink.bodies.length > 0, 5000);
      } finally {
        await service.close();
      }
      const body = sink.bodies[0] as { text: string; blocks: Array<{ text: { text: string } }> };
      assert.equal(body.text, 'webhook-inbox (scheduled check): 2 stuck outbox rows: 1 failed, 1 pending for over 1h');
      assert.match(body.blocks[1]!.text.text, /• outbox failed fulfilment fulfilment:stripe:pi_unfulfilled, attempts 10 — HTTP 500: fulfilment backend down/);
      assert.match(body.blocks[1]!.text.text, /• outbox overdue receipt_email receipt:stripe:pi_slow, attempts 6/);
    });
  });
}
