import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { coursePlatform } from '../../../src/course-platform/course-platform.js';
import { composeDomains } from '../../../src/extension/compose-domains.js';
import type { CoursePlatformTables } from '../../../src/course-platform/schema.js';
import type { PaymentEvent, PaymentState } from '../../../src/model/payment-event.js';
import { advancePayment } from '../../../src/domain/payments.js';
import { LeaseLostError } from '../../../src/errors.js';
import type { VerifiedEvent } from '../../../src/model/delivery.js';
import { EVENT_ATTEMPT_ERROR_MAX, TransactionBatch } from '../../../src/store/complete.js';
import { toDbTime } from '../../../src/db/schema.js';
import type { KyselyInboxStore } from '../../../src/store/kysely-store.js';
import { describeEachStore } from '../../support/store-suite.js';
import { paymentEffects, testConfig } from '../../support/harness.js';
import { selectEventRows } from '../../../src/db/event-rows.js';
import { customOutcome } from '../../../src/model/outcome.js';

/**
 * The store port's contract, run unchanged against every adapter: whatever the database, the
 * pipeline relies on exactly these behaviours.
 */
const LEASE_MS = 30_000;

function verified(eventId: string, overrides: Partial<VerifiedEvent> = {}): VerifiedEvent {
  return {
    provider: 'stripe',
    eventId,
    eventType: 'payment_intent.succeeded',
    payload: JSON.stringify({ id: eventId, note: 'bytes kept: \u00e9\u{1F600} "quoted" \\ ' }),
    headers: { 'stripe-signature': 't=1,v1=abc' },
    ...overrides,
  };
}

function paymentEvent(paymentId: string, state: PaymentState, details: Partial<PaymentEvent> = {}): PaymentEvent {
  return { kind: 'payment', paymentId, state, amountMinor: null, currency: null, email: null, metadata: {}, ...details };
}

await describeEachStore('store contract', { domains: [coursePlatform] }, (suite) => {
  let store: KyselyInboxStore;
  const { clock } = suite;
  before(() => {
    ({ store } = suite);
    assert.deepEqual(suite.migrated, [
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
      'course-platform/0014_orders_and_enrollments',
    ]);
  });

  test('migrations are versioned: a second run applies nothing', async () => {
    assert.deepEqual(await store.migrate(), []);
    assert.equal(store.backend, suite.backend);
  });

  test('event ids compare byte for byte: case, accents and other scripts make different events', async () => {
    const ids = ['evt_A', 'evt_a', 'evt_é', 'evt_e\u0301', 'evt_É', 'evt_ß', 'evt_ss', 'evt_日本', 'evt_😀'];
    const first = await Promise.all(ids.map((id) => store.record(verified(id))));
    assert.deepEqual(
      first.map((r) => r.outcome),
      ids.map(() => 'recorded'),
    );
    assert.equal(new Set(first.map((r) => r.id)).size, ids.length, 'a row of its own each');
    const again = await Promise.all(ids.map((id) => store.record(verified(id))));
    assert.deepEqual(
      again.map((r) => [r.outcome, r.id]),
      first.map((r) => ['duplicate', r.id]),
    );
    for (const [i, id] of ids.entries()) assert.equal((await store.findEvent('stripe', id))?.id, first[i]!.id, id);
  });

  test('record: first insert is recorded, the same key again is a duplicate of the same row', async () => {
    const first = await store.record(verified('evt_record'));
    assert.equal(first.outcome, 'recorded');
    assert.equal(first.status, 'received');
    const again = await store.record(verified('evt_record', { payload: '{"different":"body"}' }));
    assert.deepEqual(again, { outcome: 'duplicate', id: first.id, status: 'received' });
    const state = await store.findEvent('stripe', 'evt_record');
    assert.equal(state?.id, first.id);
    const stored = await selectEventRows(store.db).where('id', '=', first.id).executeTakeFirstOrThrow();
    assert.equal(stored.payload, verified('evt_record').payload, 'the first body is kept byte for byte');
  });

  test('record: an event whose key was archived (row deleted) is a duplicate of the archived row', async () => {
    const first = await store.record(verified('evt_archived'));
    await store.db
      .insertInto('archived_event_keys')
      .values({
        provider: 'stripe',
        event_id: 'evt_archived',
        event_row_id: first.id,
        event_created_at: toDbTime(clock.now()),
        archive_file: 'f.jsonl.gz',
        archived_at: toDbTime(clock.now()),
      })
      .execute();
    await store.db.deleteFrom('webhook_events').where('id', '=', first.id).execute();
    assert.deepEqual(await store.record(verified('evt_archived')), { outcome: 'duplicate', id: first.id, status: 'processed' });
    assert.equal(await store.findEvent('stripe', 'evt_archived'), null, 'not recorded again');
  });

  test('record: ids are case-sensitive and scoped by provider', async () => {
    const upper = await store.record(verified('evt_Case'));
    const lower = await store.record(verified('evt_case'));
    const otherProvider = await store.record(verified('evt_Case', { provider: 'razorpay' }));
    assert.deepEqual([upper.outcome, lower.outcome, otherProvider.outcome], ['recorded', 'recorded', 'recorded']);
    assert.equal(new Set([upper.id, lower.id, otherProvider.id]).size, 3);
  });

  test('record: concurrent identical inserts produce one row and one "recorded"', async () => {
    const results = await Promise.all(Array.from({ length: 20 }, () => store.record(verified('evt_race'))));
    assert.equal(results.filter((r) => r.outcome === 'recorded').length, 1);
    assert.equal(new Set(results.map((r) => r.id)).size, 1);
  });

  test('claim: one winner among concurrent claimers; attempts counted; a live lease is not claimable', async () => {
    const { id } = await store.record(verified('evt_claim'));
    const claims = await Promise.all(['a', 'b', 'c', 'd'].map((owner) => store.claim(id, owner, LEASE_MS)));
    const winners = claims.filter((c) => c !== null);
    assert.equal(winners.length, 1);
    assert.equal(winners[0]!.lease.attempts, 1);
    assert.equal(winners[0]!.event.eventId, 'evt_claim');
    assert.deepEqual(winners[0]!.event.headers, { 'stripe-signature': 't=1,v1=abc' });
    assert.equal(await store.claim(id, 'late', LEASE_MS), null);
    const state = await store.eventState(id);
    assert.equal(state?.status, 'processing');
    assert.equal(state?.leaseOwner, winners[0]!.lease.owner);
  });

  test('takeover after lease expiry; the stale holder can neither complete nor fail', async () => {
    const { id } = await store.record(verified('evt_takeover'));
    const first = await store.claim(id, 'worker-a', LEASE_MS);
    assert.ok(first);
    assert.ok(!(await store.dueEventIds(100)).includes(id), 'not due while the lease is live');
    clock.advance(LEASE_MS + 1);
    assert.ok((await store.dueEventIds(100)).includes(id), 'due once the lease has expired');
    const second = await store.claim(id, 'worker-b', LEASE_MS);
    assert.ok(second);
    assert.equal(second.lease.attempts, 2);

    await assert.rejects(
      store.completeFenced(first.lease, async (tx) => {
        await tx
          .withTables<CoursePlatformTables>()
          .insertInto('orders')
          .values({
            provider: 'stripe',
            payment_id: 'pi_stale',
            user_id: null,
            course_id: null,
            amount: null,
            currency: null,
            status: 'paid',
            created_at: toDbTime(clock.now()),
            updated_at: toDbTime(clock.now()),
          })
          .execute();
        return customOutcome('stale');
      }),
      LeaseLostError,
    );
    assert.equal(
      (await store.db.withTables<CoursePlatformTables>().selectFrom('orders').select('id').where('payment_id', '=', 'pi_stale').execute()).length,
      0,
      'the stale work rolled back',
    );
    assert.equal(await store.fail(first.lease, 'late', null), false);

    assert.deepEqual(await store.completeFenced(second.lease, async () => customOutcome('done by b')), customOutcome('done by b'));
    const state = await store.eventState(id);
    assert.equal(state?.status, 'processed');
    assert.equal(state?.outcome, 'done by b');
    assert.ok(state?.processedAt);
    assert.equal(await store.claim(id, 'worker-c', LEASE_MS), null, 'a processed event is never claimed again');
    const attempts = await store.db.selectFrom('event_attempts').selectAll().where('event_row_id', '=', id).execute();
    assert.deepEqual(
      attempts.map((a) => [a.attempt, a.owner, a.outcome, a.error, a.started_at, a.ended_at]),
      [[1, 'worker-a', 'lease_expired', null, toDbTime(first.lease.claimedAt), toDbTime(first.lease.expiresAt)]],
      'the takeover kept the attempt whose lease ran out; the one that processed is the row itself, and the stale fail wrote nothing',
    );
  });

  test('a lease that expired without takeover cannot commit', async () => {
    const { id } = await store.record(verified('evt_expired'));
    const claimed = await store.claim(id, 'worker-a', 1000);
    assert.ok(claimed);
    await assert.rejects(
      store.completeFenced(claimed.lease, async () => {
        clock.advance(1001);
        return customOutcome('too late');
      }),
      LeaseLostError,
    );
    assert.equal((await store.eventState(id))?.status, 'processing');
  });

  test('retry scheduling: a failure is due at its retry time, not before; null means never', async () => {
    const { id } = await store.record(verified('evt_retry'));
    const claimed = await store.claim(id, 'worker-a', LEASE_MS);
    assert.ok(claimed);
    const retryAt = new Date(clock.now().getTime() + 60_000);
    assert.equal(await store.fail(claimed.lease, 'boom', retryAt), true);
    let state = await store.eventState(id);
    assert.equal(state?.status, 'failed');
    assert.equal(state?.lastError, 'boom');
    assert.equal(state?.nextAttemptAt?.getTime(), retryAt.getTime());
    assert.equal(await store.claim(id, 'worker-b', LEASE_MS), null, 'not before the retry time');
    clock.advance(60_000);
    const retried = await store.claim(id, 'worker-b', LEASE_MS);
    assert.ok(retried);
    assert.equal(retried.lease.attempts, 2);
    assert.equal(await store.fail(retried.lease, 'gave up', null), true);
    state = await store.eventState(id);
    assert.equal(state?.nextAttemptAt, null);
    clock.advance(365 * 86_400_000);
    assert.ok(!(await store.dueEventIds(1000)).includes(id));
    assert.equal(await store.claim(id, 'worker-c', LEASE_MS), null);
    const attempts = await store.db.selectFrom('event_attempts').selectAll().where('event_row_id', '=', id).orderBy('id').execute();
    assert.deepEqual(
      attempts.map((a) => [a.attempt, a.owner, a.outcome, a.error, a.started_at]),
      [
        [1, 'worker-a', 'failed', 'boom', toDbTime(claimed.lease.claimedAt)],
        [2, 'worker-b', 'gave_up', 'gave up', toDbTime(retried.lease.claimedAt)],
      ],
    );
  });

  test('a failed attempt keeps its error cut to EVENT_ATTEMPT_ERROR_MAX, saying how much was cut', async () => {
    const { id } = await store.record(verified('evt_long_error'));
    const claimed = await store.claim(id, 'worker-a', LEASE_MS);
    assert.ok(claimed);
    const error = `Error: ${'<b>x</b>'.repeat(1000)}`;
    assert.equal(await store.fail(claimed.lease, error, null), true);
    const [attempt] = await store.db.selectFrom('event_attempts').select('error').where('event_row_id', '=', id).execute();
    assert.equal(attempt!.error, `${error.slice(0, EVENT_ATTEMPT_ERROR_MAX)}… (${error.length - EVENT_ATTEMPT_ERROR_MAX} more characters)`);
    assert.equal((await store.eventState(id))?.lastError, error, 'the event keeps its whole last error');
  });

  test('due events come oldest first, bounded by the limit', async () => {
    const ids = [];
    for (const name of ['due_1', 'due_2', 'due_3']) {
      clock.advance(10);
      ids.push((await store.record(verified(`evt_${name}`))).id);
    }
    const due = await store.dueEventIds(1000);
    const positions = ids.map((id) => due.indexOf(id));
    assert.ok(positions.every((p) => p >= 0));
    assert.deepEqual(
      [...positions].sort((a, b) => a - b),
      positions,
      'in the order they became due',
    );
    assert.equal((await store.dueEventIds(2)).length, 2);
  });

  test('business uniqueness: repeated effects leave one order, one enrollment, one receipt', async () => {
    const { id } = await store.record(verified('evt_business'));
    for (let round = 0; round < 3; round++) {
      await store.db.transaction().execute(async (tx) => {
        const batch = new TransactionBatch([]);
        const change = await advancePayment(
          tx,
          'stripe',
          paymentEvent('pi_business', 'captured', { metadata: { user_id: 'u_b', course_id: 'c_b' }, amountMinor: 4900, currency: 'INR', email: 'b@example.com' }),
          toDbTime(clock.now()),
          batch,
        );
        for (const handler of composeDomains(testConfig(suite.database.url), [coursePlatform]).handlers.captured!) {
          await handler({
            tx,
            payment: change.payment,
            previousStatus: change.previous,
            event: { id, provider: 'stripe', eventId: 'evt_business', eventType: 'x', payload: {}, headers: {}, attempts: 1, createdAt: clock.now() },
            now: toDbTime(clock.now()),
            signal: new AbortController().signal,
            batch,
          });
        }
        await batch.writeDeferred(tx);
      });
    }
    assert.deepEqual(await paymentEffects(store.db, 'pi_business'), { payments: 1, orders: 1, enrollments: 1, receipts: 1 });
    await assert.rejects(
      store.db
        .withTables<CoursePlatformTables>()
        .insertInto('enrollments')
        .values({
          user_id: 'u_b',
          course_id: 'c_b',
          status: 'active',
          provider: 'razorpay',
          payment_id: 'pay_other',
          created_at: toDbTime(clock.now()),
          updated_at: toDbTime(clock.now()),
        })
        .execute(),
      'the unique key itself refuses a second enrollment of one user in one course',
    );
  });

  // Alone (the payment not in the batch's locked payments: read and written at once) and in a batch
  // that locked the payment (read with the batch, written at its commit).
  for (const leased of [false, true]) {
    test(`payments move forward only, whatever the order; late events still fill in details (${leased ? 'written at the batch commit' : 'written at once'})`, async () => {
      const paymentId = `pi_forward_${leased}`;
      const steps: Array<[PaymentState, Partial<PaymentEvent>, boolean]> = [
        ['captured', { metadata: { plan: 'pro' } }, true],
        // A late event adds the keys the payment lacks; a key it has keeps its first value.
        ['authorized', { email: 'late@example.com', currency: 'USD', metadata: { plan: 'changed', seats: '3' } }, false],
        ['created', {}, false],
        ['refunded', {}, true],
        ['captured', {}, false],
      ];
      for (const [state, details, expectApplied] of steps) {
        const change = await store.db.transaction().execute(async (tx) => {
          const batch = new TransactionBatch(leased ? [{ provider: 'stripe', paymentId }] : []);
          const change = await advancePayment(tx, 'stripe', paymentEvent(paymentId, state, details), toDbTime(clock.now()), batch);
          await batch.writeDeferred(tx);
          return change;
        });
        assert.equal(change.applied, expectApplied, `${state} applied?`);
        const { id: _, metadata, ...stored } = await store.db.selectFrom('payments').selectAll().where('payment_id', '=', paymentId).executeTakeFirstOrThrow();
        assert.deepEqual({ ...stored, metadata: JSON.parse(metadata ?? '{}') as unknown }, change.payment, `after ${state}: the stored payment is the one the change reports`);
      }
      const payment = await store.db.selectFrom('payments').selectAll().where('payment_id', '=', paymentId).executeTakeFirstOrThrow();
      assert.equal(payment.status, 'refunded');
      assert.equal(payment.email, 'late@example.com');
      assert.equal(payment.currency, 'USD');
      assert.deepEqual(JSON.parse(payment.metadata ?? 'null'), { plan: 'pro', seats: '3' });
    });
  }
});
