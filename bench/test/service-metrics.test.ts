import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { readYieldSeconds, YIELD_COUNTER, yieldCounterValue } from '../service-metrics.js';

const EXPOSITION = [
  `# HELP ${YIELD_COUNTER} Seconds the workers' thread held processing back`,
  `# TYPE ${YIELD_COUNTER} counter`,
  `${YIELD_COUNTER}_created 1764929000`,
  `${YIELD_COUNTER} 2.75`,
  'webhook_inbox_events_total{provider="stripe"} 9',
].join('\n');

test('the yield counter is read by its exact name, not a longer one that starts with it', () => {
  assert.equal(yieldCounterValue(EXPOSITION), 2.75);
  assert.equal(yieldCounterValue(EXPOSITION.replaceAll(`${YIELD_COUNTER} `, 'webhook_inbox_other_total ')), null);
  assert.equal(yieldCounterValue(`${YIELD_COUNTER} NaN-ish`), null);
});

test("a target's yield seconds come from its /metrics, and a target without them reads null", async () => {
  const server = createServer((request, response) => {
    if (request.url === '/metrics') response.end(EXPOSITION);
    else response.writeHead(404).end();
  });
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as AddressInfo;
  try {
    assert.equal(await readYieldSeconds(`http://127.0.0.1:${port}`), 2.75);
    assert.equal(await readYieldSeconds(`http://127.0.0.1:${port}/nothing-here`), null);
  } finally {
    server.close();
  }
  assert.equal(await readYieldSeconds(`http://127.0.0.1:${port}`), null, 'nothing listening');
});
