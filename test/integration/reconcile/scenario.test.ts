import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ReconcileSettings } from '../../../src/config/settings.js';
import type { VerifiedEvent } from '../../../src/model/delivery.js';
import { reconcile, type ReconcileReport } from '../../../src/ops/reconcile/reconcile.js';
import { ReconcileRuns } from '../../../src/ops/reconcile/runs.js';
import { cli } from '../../support/cli.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { startSink } from '../../support/events.js';
import { FakeProviderApis, type RazorpayApiPayment } from '../../support/fake-provider-apis.js';
import { Harness, testConfig } from '../../support/harness.js';
import { payuDelivery, razorpayDelivery, stripeDelivery, stripePaymentEvent, TEST_SECRETS } from '../../support/signing.js';

/**
 * The scenario: 100 payments across the three providers (40 Stripe, 40 Razorpay, 20 PayU);
 * the webhooks of 20 never delivered, 5 delivered only partly (captured, the refund not). Reconcile
 * must record exactly the 25 missing events, once, with the effects their deliveries would have had.
 */
const databases = await createTestDatabases();
const NOW = Math.floor(Date.now() / 1000);
const HOUR_MS = 3_600_000;
const FAST_RETRIES = { backoffBaseMs: 20, backoffCapMs: 2000, timeoutMs: 5000 };

const stripeIds = Array.from({ length: 40 }, (_, i) => i);
const STRIPE_NEVER = new Set([0, 1, 2, 3, 4, 5, 6, 7]);
const STRIPE_PARTLY = new Set([8, 9]);
const RAZORPAY_NEVER = new Set([0, 1, 2, 3, 4, 5, 6, 7]);
const RAZORPAY_PARTLY = new Set([8, 9, 10]);
/** Never delivered at all: an operator names them (--payu-txnid). */
const PAYU_NEVER = ['txn_payu_0', 'txn_payu_1'];
/** Only the pending callback arrived. */
const PAYU_PENDING = new Set([2, 3]);

const EXPECTED_MISSING = new Set([
  ...[...STRIPE_NEVER].map((i) => `stripe/evt_s${i}_succeeded`),
  ...[...STRIPE_PARTLY].map((i) => `stripe/evt_s${i}_refunded`),
  ...[...RAZORPAY_NEVER].map((i) => `razorpay/reconcile:pay_R${i}:captured`),
  ...[...RAZORPAY_PARTLY].map((i) => `razorpay/reconcile:pay_R${i}:refunded`),
  'payu/txn_payu_0:success',
  'payu/txn_payu_1:success',
  'payu/txn_payu_2:success',
  'payu/txn_payu_3:success',
]);

const stripeEvent = (i: number, type: 'payment_intent.succeeded' | 'charge.refunded') => {
  const event = stripePaymentEvent(`evt_s${i}_${type === 'charge.refunded' ? 'refunded' : 'succeeded'}`, type, `pi_S${i}`, { userId: `user_s${i}` }) as {
    id: string;
    object: 'event';
    type: string;
    created: number;
    data: { object: Record<string, unknown> };
  };
  return { ...event, created: NOW - 3600 + i * 10 + (type === 'charge.refunded' ? 5 : 0) };
};

const razorpayPayment = (i: number, status: 'captured' | 'refunded'): RazorpayApiPayment => ({
  id: `pay_R${i}`,
  entity: 'payment',
  amount: 50_000,
  currency: 'INR',
  status,
  amount_refunded: status === 'refunded' ? 50_000 : 0,
  captured: true,
  email: `r${i}@example.com`,
  notes: { user_id: `user_r${i}`, course_id: 'course_1' },
  created_at: NOW - 3600 + i * 10,
});

const payuFields = (i: number, status: 'success' | 'pending') => ({
  txnid: `txn_payu_${i}`,
  status,
  amount: '500.00',
  productinfo: 'course_1',
  firstname: 'Buyer',
  email: `p${i}@example.com`,
  udf1: `user_p${i}`,
  udf2: 'course_1',
  mihpayid: `40399${i}`,
});

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`reconcile: 100 payments, 25 events missing (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let apis: FakeProviderApis;
    let service: Harness;
    let sink: Awaited<ReturnType<typeof startSink>>;
    let settings: ReconcileSettings;
    let delivered = 0;
    const window = () => ({ since: new Date(service.clock.now().getTime() - 24 * HOUR_MS), until: service.clock.now() });

    before(async () => {
      db = database as TestDatabase;
      apis = await FakeProviderApis.start();
      apis.stripePageSize = 10;
      sink = await startSink();
      const env = { ...apis.env(), ALERT_WEBHOOK_URL: sink.url };
      settings = testConfig(db.url, env).operations.reconcile;
      service = await Harness.start(db.url, env);

      const deliveries = [];
      for (const i of stripeIds) {
        const succeeded = stripeEvent(i, 'payment_intent.succeeded');
        apis.stripeEvents.push(succeeded);
        if (!STRIPE_NEVER.has(i)) deliveries.push(stripeDelivery(succeeded));
        if (STRIPE_PARTLY.has(i)) apis.stripeEvents.push(stripeEvent(i, 'charge.refunded'));
      }
      for (let i = 0; i < 40; i++) {
        const captured = razorpayPayment(i, 'captured');
        apis.razorpayPayments.push(RAZORPAY_PARTLY.has(i) ? razorpayPayment(i, 'refunded') : captured);
        if (RAZORPAY_PARTLY.has(i)) {
          apis.razorpayRefunds.push({ id: `rfnd_R${i}`, entity: 'refund', payment_id: `pay_R${i}`, amount: 50_000, status: 'processed', created_at: NOW - 600 + i });
        }
        if (!RAZORPAY_NEVER.has(i)) {
          deliveries.push(
            razorpayDelivery(
              { entity: 'event', event: 'payment.captured', contains: ['payment'], payload: { payment: { entity: captured } }, created_at: captured.created_at },
              `evt_rzp_${i}`,
            ),
          );
        }
      }
      for (let i = 0; i < 20; i++) {
        const { amount, ...rest } = payuFields(i, 'success');
        apis.payuTransactions.set(`txn_payu_${i}`, { ...rest, amt: amount, unmappedstatus: 'captured', mode: 'CC' });
        if (i >= 2) deliveries.push(payuDelivery(payuFields(i, 'pending')));
        if (i >= 2 && !PAYU_PENDING.has(i)) deliveries.push(payuDelivery(payuFields(i, 'success')));
      }
      for (const delivery of deliveries) assert.equal((await service.post(delivery)).status, 200);
      delivered = deliveries.length;
      await service.waitUntilProcessed(delivered, 60_000);
      // Time passes: the pending PayU payments are now older than RECONCILE_PAYU_PENDING_OLDER_THAN.
      service.clock.advance(HOUR_MS);
    });
    after(async () => {
      await service?.close();
      await apis?.close();
      await sink?.close();
      await db?.drop();
    });

    const missingKeys = (report: ReconcileReport) => new Set(report.runs.flatMap((run) => run.missing.map((m) => `${m.provider}/${m.eventId}`)));

    test('a dry run lists exactly the 25 missing events and changes nothing', async () => {
      const before = await service.allCounts();
      const report = await reconcile({ window: window(), dryRun: true, payuTxnids: PAYU_NEVER }, { inbox: service.inbox, settings, apiClient: FAST_RETRIES });
      assert.equal(report.found, 25);
      assert.deepEqual(missingKeys(report), EXPECTED_MISSING);
      assert.deepEqual(
        report.runs.map((run) => [run.provider, run.found, run.status]),
        [
          ['stripe', 10, 'dry-run'],
          ['razorpay', 11, 'dry-run'],
          ['payu', 4, 'dry-run'],
        ],
      );
      assert.deepEqual(await service.allCounts(), before);
      assert.equal((await service.db.selectFrom('reconcile_runs').select('id').execute()).length, 0);
      assert.equal((await service.db.selectFrom('operation_locks').select('id').execute()).length, 0);
    });

    test('a run that crashes midway, with 429s and 503s from the APIs, then runs again: each missing event recorded and processed once', async (t) => {
      apis.fail('/v1/events', { kind: 'status', status: 429, retryAfter: '1' });
      apis.fail('/v1/events', { kind: 'status', status: 503 });
      apis.fail('/v1/payments', { kind: 'status', status: 503 }, 2);
      apis.fail('/merchant', { kind: 'status', status: 429, retryAfter: '1' });
      let calls = 0;
      // The 6th record commits and the process dies before it counts it: the hardest moment to crash.
      const crashing = async (event: VerifiedEvent) => {
        const result = await service.inbox.receive(event);
        if (++calls === 6) throw new Error('simulated crash after the 6th record');
        return result;
      };
      await assert.rejects(
        reconcile({ window: window(), payuTxnids: PAYU_NEVER }, { inbox: service.inbox, settings, apiClient: FAST_RETRIES, receive: crashing }),
        /simulated crash/,
      );
      const crashed = await new ReconcileRuns(service.db, service.clock).unfinished('stripe');
      assert.ok(crashed, 'the crashed run is kept, with its cursor');
      assert.equal(crashed.status, 'failed');
      const recordedBeforeCrash = await countReconciled();
      assert.ok(recordedBeforeCrash >= 5 && recordedBeforeCrash < 10, `${recordedBeforeCrash} recorded before the crash`);
      assert.equal(crashed.recorded, recordedBeforeCrash - 1, 'the event recorded as it crashed is not counted yet');
      assert.notEqual(crashed.cursor, null, 'the cursor moved past the pages done before the crash');

      const report = await reconcile({ window: window(), payuTxnids: PAYU_NEVER }, { inbox: service.inbox, settings, apiClient: FAST_RETRIES });
      assert.deepEqual(
        report.runs.map((run) => [run.provider, run.resumed, run.status]),
        [
          ['stripe', true, 'finished'],
          ['stripe', false, 'finished'],
          ['razorpay', false, 'finished'],
          ['payu', false, 'finished'],
        ],
      );
      const stripeResumed = report.runs[0]!;
      assert.equal(stripeResumed.found, 10, 'the resumed run counts the whole run: before and after the crash');
      assert.equal(stripeResumed.recorded, 10);
      assert.equal(report.runs[1]!.found, 0, 'the window was done by the resumed run');
      assert.equal(report.runs[2]!.recorded, 11);
      assert.equal(report.runs[3]!.recorded, 4);
      // The faults were met and waited out.
      for (const status of [429, 503]) assert.ok(apis.requests.some((r) => r.status === status));

      const reconciled = await service.db.selectFrom('webhook_events').select(['provider', 'event_id', 'source']).where('source', '=', 'reconcile').execute();
      assert.deepEqual(new Set(reconciled.map((row) => `${row.provider}/${row.event_id}`)), EXPECTED_MISSING);
      assert.equal(reconciled.length, 25, 'each once');
      await service.waitUntilProcessed(delivered + 25, 60_000);
      await assertEffects();
      const statuses = apis.requests.reduce<Record<number, number>>((counts, r) => ({ ...counts, [r.status]: (counts[r.status] ?? 0) + 1 }), {});
      t.diagnostic(`recorded before the crash: ${recordedBeforeCrash}; runs: ${JSON.stringify(report.runs.map((r) => [r.provider, r.resumed, r.found, r.recorded, r.errors]))}`);
      t.diagnostic(`provider API requests by status (dry run included): ${JSON.stringify(statuses)}`);
      const history = await new ReconcileRuns(service.db, service.clock).history(10);
      assert.equal(
        history.reduce((sum, run) => sum + run.recorded, 0),
        25,
      );
    });

    test('a second run finds nothing; the command says so and exits 0; --history lists the runs', async () => {
      const report = await reconcile({ window: window(), payuTxnids: PAYU_NEVER }, { inbox: service.inbox, settings, apiClient: FAST_RETRIES });
      assert.equal(report.found, 0);
      assert.ok(report.runs.every((run) => run.status === 'finished' && run.found === 0));
      if (backend === 'sqlite') return; // The command's wiring is the same over both stores.
      const env = { DATABASE_URL: db.url, ...apis.env(), PAYU_MERCHANT_KEY: TEST_SECRETS.payuKey, PAYU_MERCHANT_SALT: TEST_SECRETS.payuSalt, ALERT_WEBHOOK_URL: sink.url };
      const alerts = sink.bodies.length;
      const run = await cli(['reconcile', '--json', '--payu-txnid', PAYU_NEVER[0]!], env);
      assert.equal(run.code, 0, run.output);
      assert.equal((JSON.parse(run.output) as ReconcileReport).found, 0);
      assert.equal(sink.bodies.length, alerts, 'nothing found, nothing alerted');
      const history = await cli(['reconcile', '--history'], env);
      assert.equal(history.code, 0, history.output);
      assert.match(history.output, /STARTED \(UTC\)\s+PROVIDER/);
      assert.match(history.output, /stripe .* finished\s+10\s+10\s+0/);
    });

    test('a late real delivery of a reconciled event is a duplicate, with no new effect', async () => {
      const before = await effectsSnapshot();
      const counts = await service.allCounts();
      const stripeLate = await service.post(stripeDelivery(stripeEvent(0, 'payment_intent.succeeded'), { timestamp: Math.floor(service.clock.now().getTime() / 1000) }));
      assert.equal(stripeLate.status, 200);
      assert.equal(stripeLate.body.outcome, 'duplicate');
      const payuLate = await service.post(payuDelivery(payuFields(0, 'success')));
      assert.equal(payuLate.status, 200);
      assert.equal(payuLate.body.outcome, 'duplicate');
      // Razorpay's reconciled event has a key of its own: its late webhook is recorded, and changes nothing.
      const captured = razorpayPayment(0, 'captured');
      const razorpayLate = await service.post(
        razorpayDelivery(
          { entity: 'event', event: 'payment.captured', contains: ['payment'], payload: { payment: { entity: captured } }, created_at: captured.created_at },
          'evt_rzp_0',
        ),
      );
      assert.equal(razorpayLate.status, 200);
      await service.waitUntilProcessed(counts.webhook_events + 1, 60_000);
      assert.deepEqual(await effectsSnapshot(), before);
    });

    async function countReconciled(): Promise<number> {
      return (await service.db.selectFrom('webhook_events').select('id').where('source', '=', 'reconcile').execute()).length;
    }

    /** Per payment: its state, its order, and the outbox rows written for it. */
    async function effectsSnapshot() {
      const course = service.courseDb;
      const payments = await course.selectFrom('payments').select(['provider', 'payment_id', 'status']).orderBy('provider').orderBy('payment_id').execute();
      const orders = await course.selectFrom('orders').select(['provider', 'payment_id', 'status']).orderBy('provider').orderBy('payment_id').execute();
      const enrollments = await course.selectFrom('enrollments').select(['user_id', 'status']).orderBy('user_id').execute();
      const outbox = await course.selectFrom('outbox').select(['idempotency_key', 'kind']).orderBy('idempotency_key').execute();
      return { payments, orders, enrollments, outbox };
    }

    /** What every delivery arriving would have left: 100 payments, 5 refunded, one order, receipt and fulfilment each. */
    async function assertEffects() {
      const { payments, orders, enrollments, outbox } = await effectsSnapshot();
      const refunded = new Set([...[...STRIPE_PARTLY].map((i) => `stripe/pi_S${i}`), ...[...RAZORPAY_PARTLY].map((i) => `razorpay/pay_R${i}`)]);
      assert.equal(payments.length, 100);
      for (const payment of payments) {
        const key = `${payment.provider}/${payment.payment_id}`;
        assert.equal(payment.status, refunded.has(key) ? 'refunded' : 'captured', key);
      }
      assert.equal(orders.length, 100);
      assert.equal(orders.filter((o) => o.status === 'refunded').length, 5);
      assert.equal(enrollments.filter((e) => e.status === 'revoked').length, 5);
      assert.equal(enrollments.filter((e) => e.status === 'active').length, 95);
      const kinds = (kind: string) => outbox.filter((row) => row.kind === kind).length;
      assert.deepEqual([kinds('receipt_email'), kinds('fulfilment'), kinds('fulfilment_cancellation')], [100, 100, 5]);
    }
  });
}
