import assert from 'node:assert/strict';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { test } from 'node:test';
import type { InboxMetrics } from '../../../src/observability/metrics.js';
import { RelayedMetrics, replayCalls, type RelayedCalls } from '../../../src/observability/relayed-metrics.js';

/** Metrics that remember every call made on them, as [name, ...arguments]. */
function recordingMetrics(): InboxMetrics & { calls: unknown[][] } {
  const calls: unknown[][] = [];
  return {
    calls,
    deliveryAnswered: (...args) => void calls.push(['deliveryAnswered', ...args]),
    leaseTakenOver: (...args) => void calls.push(['leaseTakenOver', ...args]),
    attemptFinished: (...args) => void calls.push(['attemptFinished', ...args]),
    eventProcessed: (...args) => void calls.push(['eventProcessed', ...args]),
    exposition: () => Promise.resolve({ contentType: 'text/plain', text: '' }),
  };
}

test('calls made in one thread are made again, in order and with their arguments, on the scraped metrics', async () => {
  const messages: RelayedCalls[] = [];
  const relayed = new RelayedMetrics((message) => messages.push(structuredClone(message)));
  relayed.attemptFinished({ provider: 'stripe', result: 'processed', attempt: 1, seconds: 0.02 });
  relayed.eventProcessed({ provider: 'stripe', staleState: 'captured', latencySeconds: 0.5 });
  relayed.leaseTakenOver('razorpay');
  relayed.deliveryAnswered('payu', 'accepted', 0.001);
  assert.equal(messages.length, 0, 'sent once the turn of the event loop is over');
  await nextTurn();
  assert.equal(messages.length, 1, 'one message for the turn');

  const scraped = recordingMetrics();
  for (const message of messages) replayCalls(scraped, message.calls);
  assert.deepEqual(scraped.calls, [
    ['attemptFinished', { provider: 'stripe', result: 'processed', attempt: 1, seconds: 0.02 }],
    ['eventProcessed', { provider: 'stripe', staleState: 'captured', latencySeconds: 0.5 }],
    ['leaseTakenOver', 'razorpay'],
    ['deliveryAnswered', 'payu', 'accepted', 0.001],
  ]);
});

test('flush sends what is pending at once; nothing is scraped where the calls were made', async () => {
  const messages: RelayedCalls[] = [];
  const relayed = new RelayedMetrics((message) => messages.push(message));
  relayed.leaseTakenOver('stripe');
  relayed.flush();
  assert.deepEqual(messages, [{ kind: 'metrics', calls: [['leaseTakenOver', 'stripe']] }]);
  await nextTurn();
  assert.equal(messages.length, 1);
  await assert.rejects(relayed.exposition(), /scraped where they are replayed/);
});
