import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventLoopLoad } from '../../../src/processing/event-loop-load.js';

const tick = () => new Promise((resolve) => setTimeout(resolve, 0));

test('a busy loop reads as busy through another view of the shared memory, and an idle one as idle', async () => {
  const measured = EventLoopLoad.shared(0.8);
  const reader = new EventLoopLoad(measured.buffer, 0.8);
  const busyIntervals: number[] = [];
  const stop = measured.measure(50, (seconds) => busyIntervals.push(seconds));
  try {
    assert.equal(reader.utilisation, 0, 'nothing measured yet');
    await new Promise((resolve) => setTimeout(resolve, 60));
    // The loop does nothing else for three intervals: the one measured next is almost all busy.
    const until = performance.now() + 400;
    while (performance.now() < until);
    await tick();
    assert.ok(reader.utilisation > 0.8, `busy loop read as ${reader.utilisation}`);
    assert.equal(reader.busy, true);
    assert.equal(busyIntervals.length, 1, 'the measuring side heard of the busy interval');
    assert.ok(busyIntervals[0]! >= 0.4, `as long as it lasted, not as asked: ${busyIntervals[0]}`);

    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok(reader.utilisation < 0.5, `idle loop read as ${reader.utilisation}`);
    assert.equal(reader.busy, false);
    assert.equal(busyIntervals.length, 1);
  } finally {
    stop();
  }
  assert.equal(reader.busy, false, 'stopped: nothing to yield to');
});
