import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ProviderAlertSettings } from '../../../src/config/settings.js';
import { claimScheduledTick } from '../../../src/db/scheduled-runs.js';
import type { Inbox } from '../../../src/inbox.js';
import { deleteStatisticsBefore, minuteOf } from '../../../src/observability/delivery-stats.js';
import { providerAlertCheck, type ProviderAlert } from '../../../src/ops/provider-alerts.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { minutesAgo, seedEvents, startSink } from '../../support/events.js';
import { Harness, serviceInbox, testConfig, waitFor } from '../../support/harness.js';

const databases = await createTestDatabases();
const HOUR_MS = 3_600_000;
const SETTINGS: ProviderAlertSettings = { cron: null, non2xxForMs: 2 * HOUR_MS, signatureFailureShare: 0.5, signatureFailureMinCount: 10, providerSilentForMs: null };

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  // Every serve process schedules the same jobs: an operator must get one alert per tick, not one per process.
  describe(`scheduled jobs run once per tick across processes (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let inbox: Inbox;

    before(async () => {
      db = database as TestDatabase;
      inbox = serviceInbox(testConfig(db.url));
      await inbox.store.migrate();
    });
    after(async () => {
      await inbox?.store.close();
      await db?.drop();
    });

    test('one process claims a tick; the next tick is claimed again, an earlier one never', async () => {
      const tick = new Date('2026-12-03T08:00:00.000Z');
      const claims = await Promise.all(['a', 'b', 'c'].map((owner) => claimScheduledTick(inbox.database, 'job', tick, owner)));
      assert.equal(claims.filter(Boolean).length, 1, 'the first tick of a job, raced by three processes');
      assert.equal(await claimScheduledTick(inbox.database, 'job', tick, 'a'), false, 'the same tick again');
      const next = new Date(tick.getTime() + 1000);
      const nextClaims = await Promise.all(['a', 'b', 'c'].map((owner) => claimScheduledTick(inbox.database, 'job', next, owner)));
      assert.equal(nextClaims.filter(Boolean).length, 1);
      assert.equal(await claimScheduledTick(inbox.database, 'job', tick, 'd'), false, 'a late process waking for an old tick');
      assert.equal(await claimScheduledTick(inbox.database, 'other job', tick, 'd'), true, 'jobs are claimed apart');
    });

    test('a provider alert is posted once while it fires, whichever process checks, and again after it stopped', async () => {
      const seedFailing = () =>
        inbox.database
          .insertInto('delivery_stats')
          .values({
            provider: 'razorpay',
            result: 'unavailable',
            minute: minuteOf(new Date(inbox.clock.now().getTime() - 3 * HOUR_MS)),
            deliveries: 1,
            ack_ms_total: 0,
            ack_ms_max: 0,
          })
          .execute();
      await seedFailing();
      const posted: ProviderAlert[][] = [];
      const post = async (alerts: ProviderAlert[]) => void posted.push(alerts);
      const processes = [0, 1].map(() => providerAlertCheck(inbox.database, inbox.clock, SETTINGS, ['razorpay']));
      const warn = () => undefined;
      await processes[0]!(post, warn);
      await processes[1]!(post, warn);
      await processes[0]!(post, warn);
      assert.deepEqual(
        posted.map((alerts) => alerts.map((alert) => `${alert.provider}:${alert.rule}`)),
        [['razorpay:non_2xx']],
      );

      await inbox.database.deleteFrom('delivery_stats').execute();
      assert.deepEqual(await processes[1]!(post, warn), [], 'it stopped');
      await seedFailing();
      await processes[1]!(post, warn);
      assert.equal(posted.length, 2, 'it fires again after it stopped');

      await inbox.database.deleteFrom('firing_alerts').execute();
      const failingPost = () => Promise.reject(new Error('alert webhook down'));
      await assert.rejects(processes[0]!(failingPost, warn), /alert webhook down/);
      await processes[1]!(post, warn);
      assert.equal(posted.length, 3, 'an alert whose post failed is posted by the next check');
      await inbox.database.deleteFrom('delivery_stats').execute();
    });

    test('the statistics retention deletes per-minute counts and samples before its limit only', async () => {
      const now = inbox.clock.now();
      const minutes = [minuteOf(new Date(now.getTime() - 15 * 24 * HOUR_MS)), minuteOf(new Date(now.getTime() - 13 * 24 * HOUR_MS))];
      for (const minute of minutes) {
        await inbox.database.insertInto('delivery_stats').values({ provider: 'stripe', result: 'accepted', minute, deliveries: 1, ack_ms_total: 1, ack_ms_max: 1 }).execute();
        await inbox.database.insertInto('pipeline_samples').values({ minute, due: 0, oldest_pending_seconds: null, failed: 0, stuck: 0, outbox_failed: 0 }).execute();
      }
      await deleteStatisticsBefore(inbox.database, new Date(now.getTime() - 14 * 24 * HOUR_MS));
      for (const table of ['delivery_stats', 'pipeline_samples'] as const) {
        const left = await inbox.database.selectFrom(table).select('minute').execute();
        assert.deepEqual(
          left.map((row) => row.minute),
          [minutes[1]],
          table,
        );
      }
    });

    test('two serve processes on one schedule post one stuck alert per tick between them', async () => {
      await seedEvents(inbox.database, [{ event_id: 'evt_stuck_once', created_at: minutesAgo(600), status: 'failed', attempts: 10, last_error: 'down' }]);
      const sink = await startSink();
      const env = { STUCK_CHECK_CRON: '* * * * * *', ALERT_WEBHOOK_URL: sink.url };
      const services = await Promise.all([Harness.start(db.url, env), Harness.start(db.url, env)]);
      const started = Date.now();
      try {
        await waitFor('three scheduled alerts', () => sink.bodies.length >= 3, 10_000);
      } finally {
        await Promise.all(services.map((service) => service.close()));
        await sink.close();
      }
      // Both processes wake every second; without the claim each tick would be posted twice.
      const ticks = Math.ceil((Date.now() - started) / 1000) + 1;
      assert.ok(sink.bodies.length <= ticks, `${sink.bodies.length} alerts over ${ticks} ticks`);
      const claimed = await inbox.database.selectFrom('scheduled_runs').select(['job', 'owner']).where('job', '=', 'stuck check').execute();
      assert.equal(claimed.length, 1);
    });
  });
}
