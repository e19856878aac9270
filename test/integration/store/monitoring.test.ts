import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { VerifiedEvent } from '../../../src/model/delivery.js';
import { openStore } from '../../../src/store/open-store.js';
import type { InboxStore } from '../../../src/store/inbox-store.js';
import { customOutcome } from '../../../src/model/outcome.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';

/** What readiness and the metrics gauges read from the store, on every store adapter. */
const databases = await createTestDatabases();
const LEASE_MS = 30_000;

function verified(eventId: string): VerifiedEvent {
  return { provider: 'razorpay', eventId, eventType: 'payment.captured', payload: '{}', headers: {} };
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`store queries for readiness and metrics (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let store: InboxStore;
    // Frozen time, so receipt times can be compared exactly.
    let now = Date.parse('2030-01-01T00:00:00.000Z');
    const clock = { now: () => new Date(now), advance: (ms: number) => void (now += ms) };

    before(async () => {
      db = database as TestDatabase;
      store = openStore(db.url, { poolSize: 2, clock });
    });
    after(async () => {
      await store?.close();
      await db?.drop();
    });

    test('ping, and the migrations not applied yet', async () => {
      await store.ping();
      assert.deepEqual(await store.pendingMigrations(), [
        '0001_webhook_events',
        '0002_course_platform',
        '0003_payment_leases',
        '0004_operations',
        '0005_outbox_dispatch',
        '0006_payu_transaction_keys',
        '0007_admin_event_filters',
        '0008_delivery_stats',
        '0009_admin_actions',
        '0010_event_source',
        '0011_reconcile_runs',
        '0013_payment_metadata',
        '0015_outbox_ordering',
        '0016_copy_progress',
        '0017_event_attempts',
        '0018_bulk_replays',
        '0019_admin_page_indexes',
        '0020_scheduled_runs',
        '0021_payment_locks',
        '0022_one_status_index',
        '0023_fewer_event_indexes',
        '0024_event_bodies',
        '0025_whole_payload_check',
        '0026_record_event_procedure',
        '0027_record_events_procedure',
        '0028_event_processings',
        '0029_admin_sessions',
        '0030_payment_list_indexes',
        '0031_course_columns_out',
        '0032_typed_outcomes',
      ]);
      await store.migrate();
      assert.deepEqual(await store.pendingMigrations(), []);
    });

    test('due, oldest pending, stuck and failed follow the events through their states', async () => {
      assert.deepEqual(await store.pipelineStats(), { due: 0, oldestPendingAt: null, stuck: 0, failed: 0 });

      const first = await store.record(verified('evt_mon_1'));
      const firstAt = clock.now();
      clock.advance(1000);
      const second = await store.record(verified('evt_mon_2'));
      const third = await store.record(verified('evt_mon_3'));
      assert.deepEqual(await store.pipelineStats(), { due: 3, oldestPendingAt: firstAt, stuck: 0, failed: 0 });

      const lease = (await store.claim(first.id, 'worker-a', LEASE_MS))!;
      assert.equal(lease.takeover, false);
      assert.deepEqual(await store.pipelineStats(), { due: 2, oldestPendingAt: firstAt, stuck: 0, failed: 0 }, 'a live lease is not due');

      clock.advance(LEASE_MS + 1);
      assert.deepEqual(await store.pipelineStats(), { due: 3, oldestPendingAt: firstAt, stuck: 1, failed: 0 }, 'an expired lease is stuck, and due');
      const takeover = (await store.claim(first.id, 'worker-b', LEASE_MS))!;
      assert.equal(takeover.takeover, true);
      await store.completeFenced(takeover.lease, async () => customOutcome('done'));

      const retried = (await store.claim(second.id, 'worker-a', LEASE_MS))!;
      await store.fail(retried.lease, 'later', new Date(clock.now().getTime() + 60_000));
      const givenUp = (await store.claim(third.id, 'worker-a', LEASE_MS))!;
      await store.fail(givenUp.lease, 'never', null);
      const stats = await store.pipelineStats();
      assert.deepEqual(
        { ...stats, oldestPendingAt: stats.oldestPendingAt?.getTime() },
        { due: 0, oldestPendingAt: firstAt.getTime() + 1000, stuck: 0, failed: 1 },
        'processed and given-up events are not pending; a retry waits for its time',
      );
    });
  });
}
