import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createInbox } from '../../../src/app.js';
import { coursePlatform } from '../../../src/course-platform/course-platform.js';
import { composeDomains } from '../../../src/extension/compose-domains.js';
import { paymentApplier, type EventApplier } from '../../../src/domain/applier.js';
import type { Inbox } from '../../../src/inbox.js';
import { Processor, type ProcessResult } from '../../../src/processing/processor.js';
import { createStripeVerifier } from '../../../src/providers/stripe/verify.js';
import { ProviderRegistry } from '../../../src/providers/registry.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { paymentEffects, TestClock, testConfig, waitFor } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent, TEST_SECRETS } from '../../support/signing.js';

const databases = await createTestDatabases();
const LEASE_MS = 1000;

/** A promise the test opens when it decides the stalled worker may go on. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`lease takeover and fencing (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let inbox: Inbox;
    let clock: TestClock;
    let realApply: EventApplier;
    let stall: { at: 'before-writes' | 'after-writes'; gate: ReturnType<typeof gate>; reached: boolean } | null = null;

    before(async () => {
      db = database as TestDatabase;
      clock = new TestClock();
      const config = testConfig(db.url, { LEASE_SECONDS: String(LEASE_MS / 1000) });
      realApply = paymentApplier({ toCanonical: new ProviderRegistry(config.providers).toCanonical, handlers: composeDomains(config, [coursePlatform]).handlers, clock });
      // Worker A: stalls once, before or after its business writes, inside the processing transaction.
      const stallingApply: EventApplier = async (tx, event, signal, batch) => {
        const current = stall;
        stall = null;
        if (!current) return realApply(tx, event, signal, batch);
        current.reached = true;
        if (current.at === 'before-writes') await current.gate.opened;
        const outcome = await realApply(tx, event, signal, batch);
        if (current.at === 'after-writes') await current.gate.opened;
        return outcome;
      };
      inbox = createInbox(config, { clock, domains: [coursePlatform], apply: stallingApply });
      await inbox.store.migrate();
    });
    after(async () => {
      await inbox?.stop(1000);
      await db?.drop();
    });

    function workerB(): Processor {
      return new Processor({
        store: inbox.store,
        apply: realApply,
        owner: 'worker-b',
        leaseMs: LEASE_MS,
        retry: { maxAttempts: 5, baseMs: 1000, maxMs: 1000 },
        clock,
        logger: inbox.logger,
        metrics: inbox.metrics,
      });
    }

    async function recordCapture(name: string): Promise<number> {
      const verifier = createStripeVerifier({ secrets: [TEST_SECRETS.stripe], toleranceSeconds: 300 });
      const delivery = stripeDelivery(stripePaymentEvent(`evt_${name}`, 'payment_intent.succeeded', `pi_${name}`, { userId: `u_${name}`, courseId: 'c_lease' }));
      const verified = verifier.verify({ headers: delivery.headers, body: Buffer.from(delivery.body), receivedAt: clock.now() });
      return (await inbox.store.record(verified)).id;
    }

    for (const at of ['before-writes', 'after-writes'] as const) {
      test(`a worker stalled past its lease (${at}) is taken over; its late commit is refused`, async () => {
        const name = `stall_${at.replace('-', '_')}`;
        const id = await recordCapture(name);
        const current = { at, gate: gate(), reached: false };
        stall = current;

        const workerA: Promise<ProcessResult> = inbox.processor.process(id);
        await waitFor('worker A stalls inside its transaction', () => current.reached);
        clock.advance(LEASE_MS + 500);

        const workerBResult = workerB().process(id);
        if (backend === 'mysql') {
          // Worker B owns the event while A still stalls. B's writes may wait on A's row locks
          // (after-writes), so A is released once B's claim is visible; A must then find its lease
          // gone and roll back. SQLite has a single writer: there B's claim waits for A's
          // transaction to end, and A's commit is refused because its lease expired.
          await waitFor('worker B claimed the event', async () => (await inbox.store.eventState(id))?.leaseOwner === 'worker-b');
        }
        current.gate.open();

        const [a, b] = await Promise.all([workerA, workerBResult]);
        assert.deepEqual(a, { result: 'lease_lost' });
        assert.equal(b.result, 'processed');
        const state = await inbox.store.eventState(id);
        assert.equal(state?.status, 'processed');
        assert.equal(state?.leaseOwner, 'worker-b');
        assert.equal(state?.attempts, 2);
        assert.deepEqual(await paymentEffects(inbox.database, `pi_${name}`), { payments: 1, orders: 1, enrollments: 1, receipts: 1 });
      });
    }

    test('a lease that merely expired cannot commit either; the next claim processes the event once', async () => {
      const name = 'expired_no_takeover';
      const id = await recordCapture(name);
      const current = { at: 'after-writes' as const, gate: gate(), reached: false };
      stall = current;

      const workerA = inbox.processor.process(id);
      await waitFor('worker A stalls', () => current.reached);
      clock.advance(LEASE_MS + 500);
      current.gate.open();
      assert.deepEqual(await workerA, { result: 'lease_lost' });
      assert.deepEqual(await paymentEffects(inbox.database, `pi_${name}`), { payments: 0, orders: 0, enrollments: 0, receipts: 0 }, 'the expired worker rolled back');
      assert.equal((await inbox.store.eventState(id))?.status, 'processing');
      assert.ok((await inbox.store.dueEventIds(100)).includes(id), 'an expired lease makes the event due for the sweeper');

      assert.equal((await workerB().process(id)).result, 'processed');
      assert.deepEqual(await paymentEffects(inbox.database, `pi_${name}`), { payments: 1, orders: 1, enrollments: 1, receipts: 1 });
    });

    test('a live lease cannot be claimed by another worker', async () => {
      const id = await recordCapture('live_lease');
      const claimed = await inbox.store.claim(id, 'worker-a', LEASE_MS);
      assert.ok(claimed);
      assert.equal(claimed.takeover, false);
      assert.equal(await inbox.store.claim(id, 'worker-b', LEASE_MS), null);
      assert.equal(await inbox.store.fail({ ...claimed.lease, token: 'forged-token' }, 'x', null), false, 'a wrong token cannot record a failure');
      clock.advance(LEASE_MS + 1);
      const takeover = await inbox.store.claim(id, 'worker-b', LEASE_MS);
      assert.ok(takeover);
      assert.equal(takeover.takeover, true, 'a claim of an expired lease is reported as a takeover');
      assert.notEqual(takeover.lease.token, claimed.lease.token);
      assert.equal(await inbox.store.fail(claimed.lease, 'late failure', null), false, 'the old lease can no longer write');
    });
  });
}
