import assert from 'node:assert/strict';
import { once } from 'node:events';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { MessageChannel } from 'node:worker_threads';
import { test } from 'node:test';
import { MessagePortConsumer, MessagePortPublisher, type AnnouncedIds } from '../../../src/queue/message-port.js';
import type { EventConsumer } from '../../../src/queue/queue.js';

function consumer(): EventConsumer & { ids: number[] } {
  const ids: number[] = [];
  return { ids, enqueue: (id) => ids.push(id) > 0, freeSlots: 1, whenFree: () => Promise.resolve() };
}

test('the ids published in one turn of the event loop go as one message, in order', async () => {
  const posted: AnnouncedIds[] = [];
  const publisher = new MessagePortPublisher((message) => posted.push(message));
  for (const id of [3, 1, 2]) publisher.publish(id);
  assert.equal(posted.length, 0, 'nothing is posted while the turn lasts');
  await nextTurn();
  publisher.publish(4);
  await nextTurn();
  assert.deepEqual(posted, [
    { kind: 'announced', ids: [3, 1, 2] },
    { kind: 'announced', ids: [4] },
  ]);
});

test('closing the publisher posts what is pending', async () => {
  const posted: AnnouncedIds[] = [];
  const publisher = new MessagePortPublisher((message) => posted.push(message));
  publisher.publish(9);
  await publisher.close();
  assert.deepEqual(posted, [{ kind: 'announced', ids: [9] }]);
  await nextTurn();
  assert.equal(posted.length, 1, 'posted once');
});

test("the consumer hands each announced id to its thread's workers, and none once it stopped consuming", async () => {
  const { port1, port2 } = new MessageChannel();
  try {
    const queue = new MessagePortConsumer(port2);
    const workers = consumer();
    queue.consume(workers);
    const publisher = new MessagePortPublisher((message) => port1.postMessage(message));
    publisher.publish(1);
    publisher.publish(2);
    await once(port2, 'message');
    assert.deepEqual(workers.ids, [1, 2]);

    await queue.stopConsuming();
    port1.postMessage({ kind: 'announced', ids: [3] } satisfies AnnouncedIds);
    await once(port2, 'message');
    assert.deepEqual(workers.ids, [1, 2]);
  } finally {
    port1.close();
    port2.close();
  }
});

test('ids that arrive before the workers start wait for them', async () => {
  const { port1, port2 } = new MessageChannel();
  try {
    const queue = new MessagePortConsumer(port2);
    port1.postMessage({ kind: 'announced', ids: [5, 6] } satisfies AnnouncedIds);
    await once(port2, 'message');
    const workers = consumer();
    queue.consume(workers);
    port1.postMessage({ kind: 'announced', ids: [7] } satisfies AnnouncedIds);
    await once(port2, 'message');
    assert.deepEqual(workers.ids, [5, 6, 7]);
  } finally {
    port1.close();
    port2.close();
  }
});
