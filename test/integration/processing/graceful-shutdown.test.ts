import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { EventApplier } from '../../../src/domain/applier.js';
import type { EventOutcome } from '../../../src/model/outcome.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness, paymentEffects } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const databases = await createTestDatabases();

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`graceful shutdown with an event still in flight (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    const open = new Set<Harness>();

    before(() => {
      db = database as TestDatabase;
    });
    after(async () => {
      for (const harness of open) await harness.close();
      await db?.drop();
    });

    test('the lease is given back after the shutdown timeout and another inbox processes the event at once', async () => {
      const stalled = { started: false, aborted: false };
      // A handler that would run past the shutdown timeout: it only stops when told to.
      const apply: EventApplier = async (_tx, _event, signal) => {
        stalled.started = true;
        return new Promise<EventOutcome>((_, reject) =>
          signal.addEventListener('abort', () => {
            stalled.aborted = true;
            reject(new Error('interrupted'));
          }),
        );
      };
      const stopping = await Harness.start(db.url, { LEASE_SECONDS: '60', SHUTDOWN_TIMEOUT_MS: '300', SWEEP_INTERVAL_MS: '60000' }, { apply });
      open.add(stopping);
      const delivery = stripeDelivery(stripePaymentEvent('evt_shutdown_1', 'payment_intent.succeeded', 'pi_shutdown_1', { userId: 'u_shutdown', courseId: 'c_shutdown' }));
      assert.equal((await stopping.post(delivery)).status, 200);
      await stopping.waitFor('the stalling handler to start', async () => stalled.started);
      // Started only now, so that it cannot take the event before the stalling inbox does.
      const survivor = await Harness.start(db.url, { LEASE_SECONDS: '60' });
      open.add(survivor);

      await stopping.close();
      open.delete(stopping);
      assert.ok(stalled.aborted, 'the handler was told to stop');

      // Well inside the 60 s lease the stopped inbox held: only a released lease makes this possible.
      await survivor.waitFor('the survivor to process the released event', async () => (await survivor.inbox.store.findEvent('stripe', 'evt_shutdown_1'))?.status === 'processed');
      const done = await survivor.inbox.store.findEvent('stripe', 'evt_shutdown_1');
      assert.equal(done?.attempts, 2, 'the interrupted attempt and the survivor');
      assert.deepEqual(await paymentEffects(survivor.db, 'pi_shutdown_1'), { payments: 1, orders: 1, enrollments: 1, receipts: 1 });
    });
  });
}
