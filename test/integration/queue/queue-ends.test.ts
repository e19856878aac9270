import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { MessageChannel } from 'node:worker_threads';
import { createInbox } from '../../../src/app.js';
import type { Inbox } from '../../../src/inbox.js';
import { MessagePortConsumer, MessagePortPublisher, type AnnouncedIds } from '../../../src/queue/message-port.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { testConfig, waitFor } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

/**
 * An inbox given one end of a transport (InboxOptions.queue) plays that end's part and has none of
 * the other: a receiver announces through its publisher, workers hear through their subscriber.
 */
const database = await createTestDatabase('sqlite');

async function deliver(inbox: Inbox, name: string): Promise<number> {
  const delivery = stripeDelivery(stripePaymentEvent(`evt_${name}`, 'payment_intent.succeeded', `pi_${name}`, { userId: `u_${name}`, courseId: 'c_ends' }));
  await inbox.verifyAndReceive('stripe', { headers: delivery.headers, body: Buffer.from(delivery.body), receivedAt: new Date() });
  return (await inbox.store.findEvent('stripe', `evt_${name}`))!.id;
}

const processed = (inbox: Inbox, id: number) => async () => (await inbox.store.eventState(id))?.status === 'processed';

describe('an inbox with one end of a queue transport', { skip: 'skip' in database && database.skip }, () => {
  let db: TestDatabase;
  before(() => {
    db = database as TestDatabase;
  });
  after(() => db?.drop());

  test('given a publisher alone, it announces each recorded event through it, and its workers start with the sweeper alone', async () => {
    const posted: AnnouncedIds[] = [];
    const publisher = new MessagePortPublisher((message) => posted.push(message));
    const inbox = createInbox(testConfig(db.url), { queue: publisher });
    try {
      await inbox.store.migrate();
      assert.equal(inbox.queue.publisher, publisher);
      assert.equal(inbox.queue.subscriber, null);
      inbox.start();
      const id = await deliver(inbox, 'publisher_alone');
      await nextTurn();
      assert.deepEqual(posted, [{ kind: 'announced', ids: [id] }]);
      await waitFor('the sweeper to process the event', processed(inbox, id));
    } finally {
      await inbox.stop(1000);
    }
  });

  test('given a subscriber alone, it announces nothing itself, and its workers take what the subscriber hands them', async () => {
    const { port1, port2 } = new MessageChannel();
    // No sweep within the test: only the subscriber can bring the event to the workers.
    const inbox = createInbox(testConfig(db.url, { SWEEP_INTERVAL_MS: '3600000' }), { queue: new MessagePortConsumer(port2) });
    try {
      await inbox.store.migrate();
      assert.equal(inbox.queue.publisher, null);
      inbox.start();
      const id = await deliver(inbox, 'subscriber_alone');
      assert.equal((await inbox.store.eventState(id))?.status, 'received', 'announced to no one');
      port1.postMessage({ kind: 'announced', ids: [id] } satisfies AnnouncedIds);
      await waitFor('the announced event processed', processed(inbox, id));
    } finally {
      await inbox.stop(1000);
      port1.close();
    }
  });
});
