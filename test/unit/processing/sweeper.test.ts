import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { Sweeper } from '../../../src/processing/sweeper.js';
import type { InboxStore } from '../../../src/store/inbox-store.js';

const HOUR = 3_600_000;

/** Polls until `done` holds (this host may be slow; the assertions after it say what must be true). */
async function until(done: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done() && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 5));
}

/** A store whose due events are `backlog` ids, handed out `limit` at a time as the workers take them. */
function backlogStore(backlog: number) {
  let next = 1;
  const sweeps: number[] = [];
  const store = {
    async dueEventIds(limit: number) {
      sweeps.push(Date.now());
      const ids = Array.from({ length: Math.min(limit, backlog - next + 1) }, (_, i) => next + i);
      next += ids.length;
      return ids;
    },
  } as unknown as InboxStore;
  return { store, sweeps };
}

test('a backlog drains at the workers pace: after a full batch the sweeper sweeps again once a worker is free', async () => {
  const { store, sweeps } = backlogStore(10);
  const enqueued: number[] = [];
  let freeCalls = 0;
  const workers = {
    enqueue: (id: number) => (enqueued.push(id), true),
    whenFree: async () => void freeCalls++,
  };
  const sweeper = new Sweeper({ store, workers, logger: pino({ level: 'silent' }), batchSize: 4 });
  sweeper.start(2_000);
  await until(() => enqueued.length >= 10);
  await sweeper.stop();
  assert.deepEqual(enqueued, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  assert.equal(freeCalls, 2, 'waited for a free worker after each of the two full batches');
  // Three sweeps: the first after the interval, the next two at once (not 2 s apart each).
  assert.ok(sweeps[2]! - sweeps[0]! < 1_000, `full batches were swept back to back (${sweeps[2]! - sweeps[0]!} ms)`);
});

test('a partial batch waits for the interval, and stop() does not wait for a free worker', async () => {
  const { store, sweeps } = backlogStore(2);
  let freeCalls = 0;
  const sweeper = new Sweeper({
    store,
    workers: { enqueue: () => true, whenFree: () => (freeCalls++, new Promise<void>(() => undefined)) },
    logger: pino({ level: 'silent' }),
    batchSize: 4,
  });
  sweeper.start(20);
  await until(() => sweeps.length >= 3);
  await sweeper.stop();
  assert.equal(freeCalls, 0, 'never waited for workers: no batch was full');
  const gaps = sweeps.slice(1).map((at, i) => at - sweeps[i]!);
  assert.ok(
    gaps.every((gap) => gap >= 19),
    `each sweep waited for the 20 ms interval (gaps ${gaps.join(', ')} ms)`,
  );

  // A full batch, then workers that never free up: stop() still returns.
  const full = backlogStore(HOUR);
  const stuck = new Sweeper({
    store: full.store,
    workers: { enqueue: () => true, whenFree: () => new Promise<void>(() => undefined) },
    logger: pino({ level: 'silent' }),
    batchSize: 4,
  });
  stuck.start(1);
  await until(() => full.sweeps.length >= 1);
  await new Promise((resolve) => setTimeout(resolve, 30));
  await stuck.stop();
  assert.equal(full.sweeps.length, 1, 'no sweep while every worker is busy');
});
