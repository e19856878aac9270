import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { systemClock } from '../../../src/clock.js';
import type { EventApplier, TextOutcome } from '../../../src/domain/applier.js';
import type { EventOutcome } from '../../../src/model/outcome.js';
import type { InboxMetrics } from '../../../src/observability/metrics.js';
import { Processor } from '../../../src/processing/processor.js';
import type { BusinessTransaction, ClaimedEvent, InboxStore, Lease } from '../../../src/store/inbox-store.js';

/** A store holding one event, leased for `leaseMs` from the claim; completion runs the work and commits. */
function oneEventStore(leaseMs: number) {
  const store = {
    async claim(id: number, owner: string): Promise<ClaimedEvent> {
      const lease: Lease = { id, owner, token: 't', expiresAt: new Date(Date.now() + leaseMs), claimedAt: new Date(), attempts: 1, payment: null };
      const event = { id, provider: 'stripe' as const, eventId: `evt_${id}`, eventType: 'test', payload: {}, headers: {}, attempts: 1, createdAt: new Date() };
      return { lease, event, takeover: false };
    },
    completeFenced: (_lease: Lease, work: (tx: BusinessTransaction) => Promise<EventOutcome>) => work({} as BusinessTransaction),
    async fail() {
      return true;
    },
  } as unknown as InboxStore;
  return store;
}

const metrics: InboxMetrics = {
  deliveryAnswered() {},
  leaseTakenOver() {},
  attemptFinished() {},
  eventProcessed() {},
  exposition: async () => ({ contentType: 'text/plain', text: '' }),
};

function processor(leaseMs: number, apply: EventApplier): Processor {
  return new Processor({
    store: oneEventStore(leaseMs),
    apply,
    owner: 'test',
    leaseMs,
    retry: { maxAttempts: 3, baseMs: 1000, maxMs: 1000 },
    clock: systemClock,
    logger: pino({ level: 'silent' }),
    metrics,
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('a handler still running when its lease expires is told so through its signal (TimeoutError)', async () => {
  let reason: unknown;
  const result = await processor(50, async (_tx, _event, signal) => {
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
    reason = signal.reason;
    throw new Error('stopped: lease expired');
  }).process(1);
  assert.equal((reason as DOMException).name, 'TimeoutError');
  assert.equal(result.result, 'failed');
});

test('a handler that finished in time is never aborted afterwards: the expiry timer ends with the attempt', async () => {
  let seen: AbortSignal | undefined;
  const result = await processor(50, async (_tx, _event, signal) => {
    seen = signal;
    return { text: 'applied' };
  }).process(2);
  assert.deepEqual(result, { result: 'processed', outcome: 'applied', outcomeDetail: { kind: 'custom', text: 'applied' } });
  await sleep(100);
  assert.equal(seen?.aborted, false);
});

test('the end of an attempt wakes whoever waits on that event, and only them', async () => {
  let finish!: () => void;
  const worker = processor(5_000, () => new Promise<TextOutcome>((resolve) => (finish = () => resolve({ text: 'applied' }))));
  const attempt = worker.process(3);
  let woken = false;
  const waiting = worker.attemptEnded(3, 10_000).then(() => (woken = true));
  // The other waiter may only ever end by its own timeout, however slow this host is.
  const otherTimeoutMs = 1_000;
  const otherSince = Date.now();
  let otherEndedAfter = -1;
  const other = worker.attemptEnded(4, otherTimeoutMs).then(() => (otherEndedAfter = Date.now() - otherSince));
  await sleep(50);
  assert.equal(woken, false, 'still waiting while the attempt runs');
  finish();
  await attempt;
  await waiting;
  assert.equal(woken, true);
  await other;
  assert.ok(otherEndedAfter >= otherTimeoutMs - 5, `a waiter on another event ends by its own timeout (after ${otherEndedAfter} ms)`);
});

test('a wait with no attempt ending resolves after its timeout', async () => {
  const started = Date.now();
  await processor(5_000, async () => ({ text: 'applied' })).attemptEnded(5, 80);
  assert.ok(Date.now() - started >= 70, `resolved after ${Date.now() - started} ms`);
});
