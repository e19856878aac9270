import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import type { DeliveryStatsRecorder } from '../../../src/observability/delivery-stats.js';
import { createService } from '../../../src/service/create-service.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { testConfig } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const databases = await createTestDatabases();

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`createService stops what it started in order (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    after(() => (database as TestDatabase).drop());

    test('webhook listener, management listener, workers, delivery counts, queue, store: each once the one before is done', async () => {
      const service = await createService(testConfig((database as TestDatabase).url, { MANAGEMENT_PORT: '0' }), { role: 'serve' });
      const { inbox, webhooks, management } = service;
      assert.ok(webhooks && management);
      const seen: string[] = [];
      const listening = () => `webhooks ${webhooks.server.listening ? 'open' : 'closed'}, management ${management.server.listening ? 'open' : 'closed'}`;
      /** Notes `step` with what is still open when it begins, then runs it. */
      const noted = <Args extends unknown[], Result>(step: string, run: (...args: Args) => Promise<Result>) => {
        return async (...args: Args): Promise<Result> => {
          await inbox.store.ping().then(
            () => seen.push(`${step} (${listening()}, store open)`),
            () => seen.push(`${step} (${listening()}, store closed)`),
          );
          return run(...args);
        };
      };
      webhooks.addHook(
        'onClose',
        noted('webhook listener closed', async () => undefined),
      );
      management.addHook(
        'preClose',
        noted('management listener', async () => undefined),
      );
      inbox.stopWorkers = noted('workers', inbox.stopWorkers.bind(inbox));
      const statistics = inbox.metrics as DeliveryStatsRecorder;
      statistics.stop = noted('delivery counts', statistics.stop.bind(statistics));
      inbox.closeQueue = noted('queue', inbox.closeQueue.bind(inbox));
      const closeStore = inbox.store.close.bind(inbox.store);
      inbox.store.close = noted('store', closeStore);

      service.start();
      await service.listen();
      const delivery = stripeDelivery(stripePaymentEvent('evt_stop_order', 'payment_intent.succeeded', 'pi_stop_order', { userId: 'u_stop', courseId: 'c_stop' }));
      const answer = await fetch(`http://127.0.0.1:${(webhooks.server.address() as { port: number }).port}/webhooks/stripe`, {
        method: 'POST',
        headers: delivery.headers,
        body: delivery.body,
      });
      assert.equal(answer.status, 200);

      await service.stop(1000);
      assert.deepEqual(seen, [
        'webhook listener closed (webhooks closed, management open, store open)',
        'management listener (webhooks closed, management open, store open)',
        'workers (webhooks closed, management closed, store open)',
        'delivery counts (webhooks closed, management closed, store open)',
        'queue (webhooks closed, management closed, store open)',
        'store (webhooks closed, management closed, store open)',
      ]);
      await assert.rejects(inbox.store.ping(), 'the store is closed last');
    });
  });
}
