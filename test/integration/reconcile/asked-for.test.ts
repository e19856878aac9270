import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import type { ReconcileSettings } from '../../../src/config/settings.js';
import type { Inbox } from '../../../src/inbox.js';
import { reconcile, type ProviderReconcileReport } from '../../../src/ops/reconcile/reconcile.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { FakeProviderApis, type RazorpayApiPayment, type StripeApiEvent } from '../../support/fake-provider-apis.js';
import { serviceInbox, testConfig } from '../../support/harness.js';
import { stripePaymentEvent } from '../../support/signing.js';

/**
 * A provider API with a fault, or someone between it and the inbox, answers more than it was asked:
 * events of other types, items created outside the window, another payment or transaction than the
 * one named. Reconcile records only what it asked for, and counts and logs the rest.
 */
const databases = await createTestDatabases();
const NOW = Math.floor(Date.now() / 1000);
const HOUR = 3600;
const FAST = { backoffBaseMs: 10, backoffCapMs: 200, timeoutMs: 2000, maxAttempts: 3, maxBytes: 64 * 1024 };

const stripeEvent = (id: string, type: string, created: number): StripeApiEvent => ({ ...(stripePaymentEvent(id, type, `pi_${id}`) as StripeApiEvent), created });

const razorpayPayment = (id: string, created: number): RazorpayApiPayment => ({
  id,
  entity: 'payment',
  amount: 50_000,
  currency: 'INR',
  status: 'captured',
  amount_refunded: 0,
  email: 'buyer@example.com',
  notes: { user_id: `user_${id}`, course_id: 'course_1' },
  created_at: created,
});

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`reconcile records only what it asked for, within its window (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let apis: FakeProviderApis;
    let inbox: Inbox;
    let settings: ReconcileSettings;
    const logLines: Array<{ msg: string; provider?: string; problems?: string[] }> = [];
    const window = { since: new Date((NOW - HOUR) * 1000), until: new Date(NOW * 1000) };
    const run = async (request: { provider: 'stripe' | 'razorpay' | 'payu'; dryRun?: boolean; payuTxnids?: string[] }): Promise<ProviderReconcileReport> => {
      const report = await reconcile({ window, ...request }, { inbox, settings, apiClient: FAST });
      assert.equal(report.runs.length, 1);
      return report.runs[0]!;
    };
    const held = async (provider: string, eventId: string) => (await inbox.store.findEvent(provider, eventId)) !== null;
    const warned = (provider: string) => logLines.filter((line) => line.provider === provider && line.msg.includes('answer not used')).flatMap((line) => line.problems ?? []);

    before(async () => {
      db = database as TestDatabase;
      apis = await FakeProviderApis.start();
      const config = testConfig(db.url, apis.env());
      settings = config.operations.reconcile;
      const logger = pino(
        { level: 'warn' },
        new Writable({ write: (chunk: Buffer, _encoding, done) => (logLines.push(JSON.parse(chunk.toString()) as (typeof logLines)[number]), done()) }),
      );
      inbox = serviceInbox(config, { logger });
      await inbox.store.migrate();
    });
    after(async () => {
      await inbox?.stop(0);
      await apis?.close();
      await db?.drop();
    });

    test('Stripe: an event of a type not asked for, or created outside the window, is counted and logged, not recorded', async () => {
      apis.stripeEvents.push(stripeEvent('evt_asked', 'payment_intent.succeeded', NOW - 60));
      apis.unasked.stripeEvents.push(
        stripeEvent('evt_other_type', 'customer.subscription.deleted', NOW - 60),
        stripeEvent('evt_too_old', 'charge.refunded', NOW - 3 * HOUR),
        stripeEvent('evt_future', 'charge.refunded', NOW + HOUR),
      );
      const dry = await run({ provider: 'stripe', dryRun: true });
      assert.deepEqual(
        dry.missing.map((m) => m.eventId),
        ['evt_asked'],
      );
      assert.equal(dry.errors, 3);

      const report = await run({ provider: 'stripe' });
      assert.equal(report.status, 'finished');
      assert.equal(report.recorded, 1);
      assert.equal(report.errors, 3, 'each item not used counts');
      assert.ok(await held('stripe', 'evt_asked'));
      for (const id of ['evt_other_type', 'evt_too_old', 'evt_future']) assert.equal(await held('stripe', id), false, `${id} not recorded`);
      const problems = warned('stripe');
      assert.ok(
        problems.some((p) => p.includes('evt_other_type is of type "customer.subscription.deleted", which was not asked for: not recorded')),
        problems.join('\n'),
      );
      assert.ok(problems.some((p) => /evt_too_old was created at .*, outside the window asked for: not recorded/.test(p)));
      assert.ok(problems.some((p) => /evt_future was created at .*, outside the window asked for/.test(p)));
    });

    test('Razorpay: payments and refunds created outside the window are counted and logged, not recorded', async () => {
      apis.razorpayPayments.push(razorpayPayment('pay_asked', NOW - 60), {
        ...razorpayPayment('pay_refunded_long_ago', NOW - 5 * HOUR),
        status: 'refunded',
        amount_refunded: 50_000,
      });
      apis.unasked.razorpayPayments.push(razorpayPayment('pay_too_old', NOW - 3 * HOUR));
      apis.unasked.razorpayRefunds.push({
        id: 'rfnd_too_old',
        entity: 'refund',
        payment_id: 'pay_refunded_long_ago',
        amount: 50_000,
        status: 'processed',
        created_at: NOW - 4 * HOUR,
      });
      const report = await run({ provider: 'razorpay' });
      assert.equal(report.status, 'finished');
      assert.deepEqual(
        report.missing.map((m) => m.eventId),
        ['reconcile:pay_asked:captured'],
      );
      assert.equal(report.errors, 2);
      assert.equal(await held('razorpay', 'reconcile:pay_too_old:captured'), false);
      assert.equal(await held('razorpay', 'reconcile:pay_refunded_long_ago:refunded'), false, 'the refund outside the window fetched nothing');
      assert.ok(warned('razorpay').some((p) => /pay_too_old was created at .*, outside the window asked for: not recorded/.test(p)));
      assert.ok(warned('razorpay').some((p) => /rfnd_too_old was created at .*, outside the window asked for: not recorded/.test(p)));
    });

    test("Razorpay: another payment than the refund's, answered for its id, fails the run and records nothing", async () => {
      apis.razorpayRefunds.push({ id: 'rfnd_swapped', entity: 'refund', payment_id: 'pay_named', amount: 50_000, status: 'processed', created_at: NOW - 60 });
      apis.razorpayImpostors.set('pay_named', { ...razorpayPayment('pay_impostor', NOW - 60), status: 'refunded', amount_refunded: 50_000 });
      const report = await run({ provider: 'razorpay' });
      assert.equal(report.status, 'failed');
      assert.match(report.lastError ?? '', /asked for payment pay_named, answered payment pay_impostor: not recorded/);
      assert.equal(await held('razorpay', 'reconcile:pay_impostor:refunded'), false);
      assert.equal(await held('razorpay', 'reconcile:pay_named:refunded'), false);
    });

    test('PayU: details that name another transaction than the one asked about are counted and logged, not recorded', async () => {
      const details = (txnid: string) => ({
        txnid,
        status: 'success',
        amt: '500.00',
        productinfo: 'course_1',
        firstname: 'Buyer',
        email: 'p@example.com',
        udf1: 'user_p',
        udf2: 'course_1',
      });
      apis.payuTransactions.set('txn_asked', details('txn_asked'));
      apis.payuTransactions.set('txn_named', details('txn_someone_else'));
      const report = await run({ provider: 'payu', payuTxnids: ['txn_asked', 'txn_named'] });
      assert.equal(report.status, 'finished');
      assert.equal(report.recorded, 1);
      assert.equal(report.errors, 1);
      assert.ok(await held('payu', 'txn_asked:success'));
      assert.equal(await held('payu', 'txn_named:success'), false);
      assert.equal(await held('payu', 'txn_someone_else:success'), false);
      assert.ok(warned('payu').some((p) => p.includes('asked about transaction txn_named, answered about "txn_someone_else": not recorded')));
    });
  });
}
