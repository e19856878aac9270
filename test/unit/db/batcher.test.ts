import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Batcher } from '../../../src/db/batcher.js';
import { claimsByOwner } from '../../../src/db/lease.js';

/** A batch runner that records the batches it got and finishes each when told to. */
function controlledRunner() {
  const batches: number[][] = [];
  const finish: Array<() => void> = [];
  const run = (inputs: number[]) => {
    batches.push(inputs);
    return new Promise<Array<PromiseSettledResult<number>>>((resolve) =>
      finish.push(() => resolve(inputs.map((n) => (n < 0 ? { status: 'rejected', reason: new Error(`bad ${n}`) } : { status: 'fulfilled', value: n * 10 })))),
    );
  };
  return { batches, finish, run };
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

test('requests of one turn share a batch; while it runs, the next one accumulates', async () => {
  const runner = controlledRunner();
  const batcher = new Batcher(runner.run, { maxBatch: 100, maxInFlight: 1 });
  const first = [1, 2, 3].map((n) => batcher.submit(n));
  await tick();
  const second = [4, 5].map((n) => batcher.submit(n));
  await tick();
  assert.deepEqual(runner.batches, [[1, 2, 3]], 'the second batch waits for the slot');
  runner.finish[0]!();
  assert.deepEqual(await Promise.all(first), [10, 20, 30]);
  await tick();
  assert.deepEqual(runner.batches, [
    [1, 2, 3],
    [4, 5],
  ]);
  runner.finish[1]!();
  assert.deepEqual(await Promise.all(second), [40, 50]);
});

test('batches are capped by count and by weight; several run at once when allowed', async () => {
  const runner = controlledRunner();
  const batcher = new Batcher(runner.run, { maxBatch: 3, maxInFlight: 2, weight: (n) => n, maxWeight: 10 });
  const all = [1, 1, 1, 1, 9, 1].map((n) => batcher.submit(n));
  await tick();
  assert.deepEqual(
    runner.batches,
    [
      [1, 1, 1],
      [1, 9],
    ],
    'three at most, then stop once the weight reaches 10',
  );
  runner.finish[0]!();
  runner.finish[1]!();
  await tick();
  await tick();
  assert.deepEqual(runner.batches.at(-1), [1]);
  runner.finish[2]!();
  assert.equal((await Promise.all(all)).length, 6);
});

test('a full batch may take a slot beyond maxInFlight, up to maxInFlightWhenFull; a partial one waits for a slot', async () => {
  const runner = controlledRunner();
  const batcher = new Batcher(runner.run, { maxBatch: 2, maxInFlight: 1, maxInFlightWhenFull: 3 });
  const all = [batcher.submit(1)];
  await tick();
  all.push(batcher.submit(2), batcher.submit(3));
  await tick();
  assert.deepEqual(runner.batches, [[1], [2, 3]], 'a full batch starts beside the one running');
  all.push(batcher.submit(4));
  await tick();
  assert.equal(runner.batches.length, 2, 'a partial batch waits for one of maxInFlight');
  all.push(batcher.submit(5), batcher.submit(6), batcher.submit(7));
  await tick();
  assert.deepEqual(runner.batches.slice(2), [[4, 5]], 'three at most, however many full batches wait');
  runner.finish[0]!();
  await tick();
  await tick();
  assert.deepEqual(runner.batches.slice(3), [[6, 7]], 'a freed slot goes to the full batch waiting');
  runner.finish.slice(1).forEach((finish) => finish());
  await tick();
  assert.deepEqual(await Promise.all(all), [10, 20, 30, 40, 50, 60, 70]);
});

test('a shape rounds a batch down; the requests left over start the next batch', async () => {
  const runner = controlledRunner();
  const batcher = new Batcher(runner.run, { maxBatch: 100, maxInFlight: 2, shape: (size) => (size >= 4 ? 4 : size) });
  const all = [1, 2, 3, 4, 5, 6, 7].map((n) => batcher.submit(n));
  await tick();
  assert.deepEqual(
    runner.batches,
    [
      [1, 2, 3, 4],
      [5, 6, 7],
    ],
    'seven waiting: a batch of four, then the three left in the free slot',
  );
  runner.finish[0]!();
  runner.finish[1]!();
  assert.deepEqual(await Promise.all(all), [10, 20, 30, 40, 50, 60, 70]);
});

test('each request gets its own error; a failed batch rejects every request in it', async () => {
  const runner = controlledRunner();
  const batcher = new Batcher(runner.run, { maxBatch: 10, maxInFlight: 1 });
  const results = Promise.allSettled([1, -2, 3].map((n) => batcher.submit(n)));
  await tick();
  runner.finish[0]!();
  assert.deepEqual(
    (await results).map((r) => r.status),
    ['fulfilled', 'rejected', 'fulfilled'],
  );

  const broken = new Batcher<number, number>(
    async () => {
      throw new Error('database down');
    },
    { maxBatch: 10, maxInFlight: 1 },
  );
  const failed = await Promise.allSettled([1, 2].map((n) => broken.submit(n)));
  assert.deepEqual(
    failed.map((r) => r.status === 'rejected' && (r.reason as Error).message),
    ['database down', 'database down'],
  );
});

test('claims: one call per owner and lease time, each id asked once, a repeated id claimed by its first request only', async () => {
  const calls: Array<{ ids: number[]; owner: string; leaseMs: number }> = [];
  const run = claimsByOwner(async (ids, owner, leaseMs) => {
    calls.push({ ids, owner, leaseMs });
    return new Map(ids.filter((id) => id !== 3).map((id) => [id, `${owner}:${id}`]));
  });
  const results = await run([
    { id: 1, owner: 'a', leaseMs: 1000 },
    { id: 2, owner: 'b', leaseMs: 1000 },
    { id: 1, owner: 'a', leaseMs: 1000 },
    { id: 3, owner: 'a', leaseMs: 1000 },
    { id: 2, owner: 'a', leaseMs: 2000 },
  ]);
  assert.deepEqual(calls, [
    { ids: [1, 3], owner: 'a', leaseMs: 1000 },
    { ids: [2], owner: 'b', leaseMs: 1000 },
    { ids: [2], owner: 'a', leaseMs: 2000 },
  ]);
  assert.deepEqual(
    results.map((r) => (r.status === 'fulfilled' ? r.value : 'rejected')),
    ['a:1', 'b:2', null, null, 'a:2'],
  );
});

test("a request with the key of one queued or running gets that one's result or error instead of running again", async () => {
  const runner = controlledRunner();
  const batcher = new Batcher(runner.run, { maxBatch: 10, maxInFlight: 2, coalesce: { keyOf: String, copy: (first) => first + 1 } });
  const queued = [batcher.submit(7), batcher.submit(7), batcher.submit(-7), batcher.submit(-7)];
  await tick();
  const whileRunning = batcher.submit(7);
  await tick();
  assert.deepEqual(runner.batches, [[7, -7]], 'each key once, the copy that came while it ran included');
  runner.finish[0]!();
  const settled = await Promise.allSettled([...queued, whileRunning]);
  assert.deepEqual(
    settled.map((s) => (s.status === 'fulfilled' ? s.value : (s.reason as Error).message)),
    [70, 71, 'bad -7', 'bad -7', 71],
  );

  const again = batcher.submit(7);
  await tick();
  assert.deepEqual(runner.batches, [[7, -7], [7]], 'once settled, the key runs again');
  runner.finish[1]!();
  assert.equal(await again, 70);
});

test('with waitMs, a lone request waits for company: a batch starts when full or when its oldest has waited', async () => {
  const runner = controlledRunner();
  const batcher = new Batcher(runner.run, { maxBatch: 3, maxInFlight: 1, waitMs: 60 });
  const started = performance.now();
  const first = batcher.submit(1);
  await tick();
  assert.deepEqual(runner.batches, [], 'not at once');
  await new Promise((resolve) => setTimeout(resolve, 20));
  const second = batcher.submit(2);
  await new Promise((resolve) => setTimeout(resolve, 80));
  assert.deepEqual(runner.batches, [[1, 2]], 'one batch, started by the wait of the first request');
  runner.finish[0]!();
  assert.deepEqual(await Promise.all([first, second]), [10, 20]);
  assert.ok(performance.now() - started >= 60);

  const full = [3, 4, 5, 6].map((n) => batcher.submit(n));
  await tick();
  assert.deepEqual(runner.batches.at(-1), [3, 4, 5], 'a full batch does not wait');
  runner.finish[1]!();
  await tick();
  assert.equal(runner.batches.length, 2, 'the one left over waits for company again');
  await new Promise((resolve) => setTimeout(resolve, 80));
  assert.deepEqual(runner.batches.at(-1), [6]);
  runner.finish[2]!();
  assert.deepEqual(await Promise.all(full), [30, 40, 50, 60]);
});
