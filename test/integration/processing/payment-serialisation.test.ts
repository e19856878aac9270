import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { systemClock, type Clock } from '../../../src/clock.js';
import { coursePlatform } from '../../../src/course-platform/course-platform.js';
import { composeDomains } from '../../../src/extension/compose-domains.js';
import { paymentApplier, type EventApplier } from '../../../src/domain/applier.js';
import { ProviderRegistry } from '../../../src/providers/registry.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { Harness, paymentEffects, testConfig } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const PAYMENTS = 8;
const LIFECYCLE = ['payment_intent.created', 'payment_intent.amount_capturable_updated', 'payment_intent.succeeded', 'charge.succeeded'];

/**
 * The standard applier, slowed down by `delayMs`, recording how many attempts ran and how many events
 * of each payment run at the same moment. It observes before the business writes, inside the
 * transaction: the payment's lock, taken first, keeps the whole of the processing apart, not only the
 * writes. An event of the payment named in `held.payment` stops there, its payment locked, until
 * `held.release()`.
 */
function observingApplier(clock: Clock, delayMs = 25) {
  const running = new Map<string, number>();
  const seen = { perPayment: 0, attempts: 0 };
  const held = heldPayment();
  const config = testConfig('mysql://unused/db');
  const providers = new ProviderRegistry(config.providers);
  const apply = paymentApplier({ toCanonical: providers.toCanonical, handlers: composeDomains(config, [coursePlatform]).handlers, clock });
  const observed: EventApplier = async (tx, event, signal, batch) => {
    const payment = event.eventId.split('_')[2]!;
    const now = (running.get(payment) ?? 0) + 1;
    running.set(payment, now);
    seen.attempts++;
    seen.perPayment = Math.max(seen.perPayment, now);
    try {
      if (payment === held.payment) await held.holding();
      await sleep(delayMs);
      return await apply(tx, event, signal, batch);
    } finally {
      running.set(payment, running.get(payment)! - 1);
    }
  };
  return { seen, held, apply: observed };
}

/** A payment whose event, once running, waits for the test: `started` resolves when it does. */
function heldPayment() {
  let start = () => {};
  let release = () => {};
  const started = new Promise<void>((resolve) => (start = resolve));
  const released = new Promise<void>((resolve) => (release = resolve));
  return {
    payment: undefined as string | undefined,
    started,
    holding() {
      start();
      return released;
    },
    release: () => release(),
  };
}

/** Processes that write at once: the server stores (SQLite has one writer, see choosing a store). */
const SERVER_STORES = ['mysql', 'postgres'] as const;

for (const backend of SERVER_STORES) {
  const database = await createTestDatabase(backend);
  after(async () => {
    if (!('skip' in database)) await database.drop();
  });

  describe(`events of one payment never run at the same time; different payments do (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let servers: Harness[];
    const { seen, held, apply } = observingApplier(systemClock);

    before(async () => {
      db = database as TestDatabase;
      // Two inboxes, each with its own pool and sweeper: only the database keeps them apart.
      const env = { WORKER_CONCURRENCY: '8' };
      servers = [await Harness.start(db.url, env, { domains: [coursePlatform], apply }), await Harness.start(db.url, env, { domains: [coursePlatform], apply })];
    });
    after(async () => {
      for (const server of servers ?? []) await server.close();
    });

    test(`${PAYMENTS} payments x ${LIFECYCLE.length} events, all delivered at once to two inboxes`, async () => {
      const deliveries = Array.from({ length: PAYMENTS }, (_, n) =>
        LIFECYCLE.map((type) => stripeDelivery(stripePaymentEvent(`evt_serial_${n}_${type}`, type, `pi_serial_${n}`, { userId: `u_serial_${n}`, courseId: 'c_serial' }))),
      ).flat();
      const responses = await Promise.all(deliveries.map((d, i) => servers[i % 2]!.post(d)));
      assert.ok(responses.every((r) => r.status === 200));
      await servers[0]!.waitUntilProcessed(deliveries.length, 30_000);

      assert.equal(seen.perPayment, 1, 'never two events of one payment at the same moment');
      for (let n = 0; n < PAYMENTS; n++) {
        const payment = await servers[0]!.db.selectFrom('payments').select('status').where('payment_id', '=', `pi_serial_${n}`).executeTakeFirstOrThrow();
        assert.equal(payment.status, 'captured');
        assert.deepEqual(await paymentEffects(servers[0]!.db, `pi_serial_${n}`), { payments: 1, orders: 1, enrollments: 1, receipts: 1 });
      }
      const locks = await servers[0]!.db.selectFrom('payment_leases').select('payment_id').execute();
      assert.equal(locks.length, PAYMENTS, 'one lock row per payment');
      assert.equal(await servers[0]!.countRows('webhook_events', 'failed'), 0);
    });

    // Events batched into one transaction run one after another; what must hold is that a payment kept
    // busy holds up only its own events, never those of another payment, on either inbox.
    test('a payment held in the middle of its processing holds up no other payment, on either inbox', async () => {
      held.payment = 'held';
      const heldId = 'evt_serial_held_created';
      const heldEvent = stripePaymentEvent(heldId, 'payment_intent.created', 'pi_serial_held', { userId: 'u_held', courseId: 'c_serial' });
      assert.equal((await servers[0]!.post(stripeDelivery(heldEvent))).status, 200);
      await held.started;
      // One other payment's event to each inbox: the first shares its process with the held event.
      const others = [0, 1].map((n) => `evt_serial_free${n}_succeeded`);
      for (const [n, id] of others.entries()) {
        const event = stripePaymentEvent(id, 'payment_intent.succeeded', `pi_serial_free${n}`, { userId: `u_free${n}`, courseId: 'c_serial' });
        assert.equal((await servers[n]!.post(stripeDelivery(event))).status, 200);
      }
      const status = async (id: string) => (await servers[0]!.inbox.store.findEvent('stripe', id))?.status;
      for (const id of others) await servers[0]!.waitFor(`${id} processed while the held payment is busy`, async () => (await status(id)) === 'processed');
      assert.notEqual(await status(heldId), 'processed');
      held.release();
      await servers[0]!.waitFor('the held event processed once released', async () => (await status(heldId)) === 'processed');
    });

    test('an event about no payment needs no payment lock', async () => {
      const dispute = stripeDelivery({ id: 'evt_serial_dispute', object: 'event', type: 'charge.dispute.created', data: { object: { id: 'dp_1', object: 'dispute' } } });
      assert.equal((await servers[0]!.post(dispute)).status, 200);
      await servers[0]!.waitFor('dispute processed', async () => (await servers[0]!.inbox.store.findEvent('stripe', 'evt_serial_dispute'))?.status === 'processed');
      const row = await servers[0]!.db.selectFrom('webhook_events').select('payment_id').where('event_id', '=', 'evt_serial_dispute').executeTakeFirstOrThrow();
      assert.equal(row.payment_id, null);
    });
  });

  describe(`inline mode: an event whose payment is busy waits for it, not for a sweep (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let server: Harness;
    const { seen, apply } = observingApplier(systemClock);

    before(async () => {
      db = database as TestDatabase;
      // No sweeper within the test: each request's own attempt must process its event, after waiting for the payment's lock.
      server = await Harness.start(db.url, { PROCESSING_MODE: 'inline', SWEEP_INTERVAL_MS: '3600000', INLINE_WAIT_MS: '5000' }, { domains: [coursePlatform], apply });
    });
    after(async () => {
      await server?.close();
    });

    test('events of one payment delivered together are each answered 200 after processing', async () => {
      const deliveries = LIFECYCLE.map((type) => stripeDelivery(stripePaymentEvent(`evt_inline_${type}`, type, 'pi_inline', { userId: 'u_inline', courseId: 'c_inline' })));
      const started = Date.now();
      const responses = await Promise.all(deliveries.map((d) => server.post(d)));
      assert.deepEqual(
        responses.map((r) => r.status),
        LIFECYCLE.map(() => 200),
      );
      assert.ok(Date.now() - started < 4000, `answered in ${Date.now() - started} ms, not after waiting for a sweep`);
      assert.equal(seen.perPayment, 1);
      const rows = await server.db.selectFrom('webhook_events').select('status').where('event_id', 'like', 'evt_inline_%').execute();
      assert.deepEqual(
        rows.map((r) => r.status),
        LIFECYCLE.map(() => 'processed'),
      );
    });
  });

  describe(`inline mode: a duplicate waits for the attempt running in its process, without polling the store (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let server: Harness;
    const { seen, apply } = observingApplier(systemClock, 600);

    before(async () => {
      server = await Harness.start(
        (database as TestDatabase).url,
        { PROCESSING_MODE: 'inline', SWEEP_INTERVAL_MS: '3600000', INLINE_WAIT_MS: '5000' },
        { domains: [coursePlatform], apply },
      );
    });
    after(async () => {
      await server?.close();
    });

    test('both copies are answered 200 after one attempt, the waiting one reading the event at most twice', async () => {
      const store = server.inbox.store;
      const eventState = store.eventState.bind(store);
      let reads = 0;
      store.eventState = (id) => {
        reads++;
        return eventState(id);
      };
      const delivery = stripeDelivery(stripePaymentEvent('evt_inline_duplicate', 'payment_intent.succeeded', 'pi_inline_duplicate', { userId: 'u_dup', courseId: 'c_dup' }));
      const responses = await Promise.all([server.post(delivery), server.post(delivery)]);
      assert.deepEqual(
        responses.map((r) => r.status),
        [200, 200],
      );
      assert.equal(seen.attempts, 1);
      // Reading every 100 ms through the 600 ms attempt would be six reads.
      assert.ok(reads >= 1 && reads <= 2, `the waiting copy read the event ${reads} times`);
      assert.equal((await store.findEvent('stripe', 'evt_inline_duplicate'))?.status, 'processed');
    });
  });
}
