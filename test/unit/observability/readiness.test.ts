import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import { Readiness } from '../../../src/observability/readiness.js';

function readinessWithLog(timeoutMs?: number) {
  const lines: Array<{ level: number; msg: string }> = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { level: number; msg: string }) });
  return { readiness: new Readiness(logger, timeoutMs), lines };
}

describe('Readiness', () => {
  test('a check that does not answer in time fails with a timeout', async () => {
    const { readiness } = readinessWithLog(50);
    readiness.add({ name: 'hangs', check: () => new Promise(() => {}) });
    readiness.add({ name: 'fine', check: async () => {} });
    const report = await readiness.report();
    assert.equal(report.ready, false);
    assert.equal(report.checks.hangs?.error, 'no answer within 50 ms');
    assert.equal(report.checks.fine?.ok, true);
  });

  test('a failure is logged when it starts and when it ends, not on every probe', async () => {
    const { readiness, lines } = readinessWithLog();
    let up = false;
    readiness.add({
      name: 'queue',
      check: async () => {
        if (!up) throw new Error('connection refused');
      },
    });
    for (let probe = 0; probe < 3; probe++) assert.equal((await readiness.report()).ready, false);
    up = true;
    for (let probe = 0; probe < 3; probe++) assert.equal((await readiness.report()).ready, true);
    assert.deepEqual(
      lines.map((line) => [line.level, line.msg]),
      [
        [40, 'not ready: queue check failed'],
        [30, 'ready again: queue check passes'],
      ],
    );
  });

  test('two checks cannot share a name', () => {
    const { readiness } = readinessWithLog();
    readiness.add({ name: 'queue', check: async () => {} });
    assert.throws(() => readiness.add({ name: 'queue', check: async () => {} }), /already registered/);
  });
});
