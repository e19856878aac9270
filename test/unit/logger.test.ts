import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createLogger } from '../../src/observability/logger.js';

function capture(level = 'info') {
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger(level, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines };
}

describe('createLogger redacts what must never be logged', () => {
  test('signature and authorization headers, wherever a request or headers object is logged', () => {
    const { logger, lines } = capture();
    const headers = { 'stripe-signature': 't=1,v1=SECRETSIG', 'x-razorpay-signature': 'SECRETSIG', authorization: 'Bearer SECRETSIG', 'content-type': 'application/json' };
    logger.info({ req: { method: 'POST', headers } }, 'request');
    logger.info({ headers }, 'headers');
    logger.info({ event: { headers } }, 'nested');
    const text = JSON.stringify(lines);
    assert.ok(!text.includes('SECRETSIG'), text);
    assert.equal((lines[1]!.headers as Record<string, string>)['content-type'], 'application/json', 'other headers stay');
    assert.equal((lines[1]!.headers as Record<string, string>)['stripe-signature'], '[redacted]');
  });

  test('payloads and bodies, and the SQL of a driver error', () => {
    const { logger, lines } = capture();
    logger.info({ payload: '{"card":"SECRETPAYLOAD"}' }, 'payload');
    logger.info({ event: { body: 'SECRETPAYLOAD' } }, 'body');
    const driverError = Object.assign(new Error('Data too long'), { sql: "insert into webhook_events values ('SECRETPAYLOAD')" });
    logger.error({ err: driverError }, 'failed');
    logger.error({ err: new Error('wrapped', { cause: driverError }) }, 'failed');
    const text = JSON.stringify(lines);
    assert.ok(!text.includes('SECRETPAYLOAD'), text);
    assert.match(text, /Data too long/, 'the error itself is still logged');
  });
});
