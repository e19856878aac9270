import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { InFlight } from '../../../src/observability/in-flight.js';
import { RequestLoad } from '../../../src/processing/request-load.js';
import { keepBusy } from '../../support/event-loop.js';

const tick = () => sleep(0);

test('a busy loop with deliveries waiting reads as overloaded through another view of the shared memory; an idle one does not', async () => {
  const thresholds = { utilisation: 0.8, inFlight: 2 };
  const measured = RequestLoad.shared(thresholds);
  const reader = new RequestLoad(measured.buffer, thresholds);
  const deliveries = new InFlight();
  const overloadedIntervals: number[] = [];
  const stop = measured.measure(50, deliveries, (seconds) => overloadedIntervals.push(seconds));
  try {
    assert.equal(reader.utilisation, 0, 'nothing measured yet');
    assert.equal(reader.overloaded, false);
    deliveries.enter();
    deliveries.enter();
    deliveries.enter();
    await sleep(60);
    // The loop does nothing else for three intervals: the one measured next is almost all busy.
    keepBusy(400);
    await tick();
    assert.ok(reader.utilisation > 0.8, `busy loop read as ${reader.utilisation}`);
    assert.ok(Math.abs(reader.inFlight - 3) < 0.05, `three deliveries waited throughout: read ${reader.inFlight}`);
    assert.equal(reader.overloaded, true);
    assert.equal(overloadedIntervals.length, 1, 'the measuring side heard of the overloaded interval');
    assert.ok(overloadedIntervals[0]! >= 0.4, `as long as it lasted, not as asked: ${overloadedIntervals[0]}`);

    await sleep(200);
    assert.ok(reader.utilisation < 0.5, `idle loop read as ${reader.utilisation}`);
    assert.equal(reader.overloaded, false, 'deliveries waiting at an idle loop wait for something else (a distant database)');
    assert.equal(overloadedIntervals.length, 1);
  } finally {
    stop();
  }
  assert.equal(reader.overloaded, false, 'stopped: nothing to yield to');
  assert.equal(reader.inFlight, 0);
});

test('a busy loop with fewer deliveries waiting than the threshold keeps up: not overloaded', async () => {
  const load = RequestLoad.shared({ utilisation: 0.5, inFlight: 2 });
  const deliveries = new InFlight();
  const stop = load.measure(50, deliveries);
  try {
    await sleep(60);
    // One delivery waits all along, a second for the last half of the busy stretch: 1.5 on average.
    deliveries.enter();
    keepBusy(50);
    deliveries.enter();
    keepBusy(50);
    await tick();
    assert.ok(load.utilisation > 0.5, `busy loop read as ${load.utilisation}`);
    assert.ok(load.inFlight > 1 && load.inFlight < 2, `between one and two on average: ${load.inFlight}`);
    assert.equal(load.overloaded, false);
  } finally {
    stop();
  }
});
