import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { WorkerPool } from '../../../src/processing/worker-pool.js';

/** Work that runs until released, recording how many ran at once. */
function heldWork() {
  const running = new Map<number, () => void>();
  let most = 0;
  const work = (id: number) =>
    new Promise<void>((resolve) => {
      running.set(id, () => {
        running.delete(id);
        resolve();
      });
      most = Math.max(most, running.size);
    });
  const finish = async (id: number) => {
    running.get(id)!();
    // The pool starts the next work once the finished one's promise has settled.
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { work, running, finish, most: () => most };
}

test('while the pool yields, at most the yield concurrency runs; after it, the next finish starts the rest', async () => {
  const { work, running, finish, most } = heldWork();
  let yielding = true;
  const pool = new WorkerPool({ work, concurrency: 8, logger: pino({ level: 'silent' }), yielding: { active: () => yielding, concurrency: 2 } });
  for (let id = 1; id <= 6; id++) pool.enqueue(id);
  assert.deepEqual([...running.keys()], [1, 2], 'two of six started while yielding');
  assert.equal(pool.freeSlots, -4, 'a transport reading more would only queue it');

  await finish(1);
  assert.deepEqual([...running.keys()], [2, 3], 'a finish makes room for one, not more');

  yielding = false;
  await finish(2);
  assert.deepEqual([...running.keys()], [3, 4, 5, 6], 'the yield over, the first finish starts every waiting id');
  assert.equal(most(), 4);
  for (const id of [3, 4, 5, 6]) await finish(id);
  assert.equal(await pool.stop(100), true);
});

test('a yield concurrency above the pool concurrency changes nothing; without a yield the pool runs its concurrency', async () => {
  const wide = heldWork();
  const yielding = new WorkerPool({ work: wide.work, concurrency: 3, logger: pino({ level: 'silent' }), yielding: { active: () => true, concurrency: 10 } });
  for (let id = 1; id <= 5; id++) yielding.enqueue(id);
  assert.equal(wide.running.size, 3);

  const plain = heldWork();
  const pool = new WorkerPool({ work: plain.work, concurrency: 3, logger: pino({ level: 'silent' }) });
  for (let id = 1; id <= 5; id++) pool.enqueue(id);
  assert.equal(plain.running.size, 3);
  for (const { running, finish } of [wide, plain]) while (running.size > 0) await finish([...running.keys()][0]!);
  assert.deepEqual([await yielding.stop(100), await pool.stop(100)], [true, true]);
});
