import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { InFlight } from '../../../src/observability/in-flight.js';

test('deliveries in flight are averaged over time, whatever their count at the moment of reading', async () => {
  const deliveries = new InFlight();
  const first = deliveries.total();
  deliveries.enter();
  deliveries.enter();
  await sleep(100);
  deliveries.leave();
  await sleep(100);
  deliveries.leave();
  const second = deliveries.total();
  const mean = (second.countMs - first.countMs) / (second.at - first.at);
  // Two for the first half, one for the second, none at the moment of reading.
  assert.ok(Math.abs(mean - 1.5) < 0.1, `mean ${mean}`);
  const idle = deliveries.total();
  await sleep(20);
  assert.equal(deliveries.total().countMs, idle.countMs, 'nothing in flight adds nothing');
});
