import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createLogger } from '../../../src/observability/logger.js';

function capture(level = 'info') {
  const lines: Array<Record<string, unknown>> = [];
  const raw: string[] = [];
  const logger = createLogger(level, {
    write: (line: string) => {
      raw.push(line);
      lines.push(JSON.parse(line) as Record<string, unknown>);
    },
  });
  return { logger, lines, raw };
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
    logger.error({ err: null }, 'not an error');
    logger.error({ err: 'a message' }, 'not an error');
    const text = JSON.stringify(lines);
    assert.ok(!text.includes('SECRETPAYLOAD'), text);
    assert.match(text, /Data too long/, 'the error itself is still logged');
  });

  test('child bindings, and objects left as the caller gave them', () => {
    const { logger, lines, raw } = capture();
    const event = { id: 7, payload: 'SECRETPAYLOAD', headers: { 'x-razorpay-signature': 'SECRETSIG', 'x-razorpay-event-id': 'evt_1' } };
    logger.child({ event, body: 'SECRETPAYLOAD' }).child({ attempt: 2 }).info({ event }, 'bound');
    assert.ok(!raw[0]!.includes('SECRET'), raw[0]);
    assert.equal(lines[0]!.attempt, 2, 'bindings of every generation stay');
    assert.equal((lines[0]!.event as { headers: Record<string, string> }).headers['x-razorpay-event-id'], 'evt_1', 'other headers stay');
    assert.equal(event.payload, 'SECRETPAYLOAD');
    assert.equal(event.headers['x-razorpay-signature'], 'SECRETSIG');
  });

  test('a line without secrets is logged as given', () => {
    const { logger, lines } = capture();
    logger.info({ provider: 'stripe', eventId: 'evt_1', statusCode: 200, ackMs: 1.5, counts: { received: 2 }, at: new Date(0) }, 'delivery acknowledged');
    assert.deepEqual(
      { ...lines[0], time: undefined, pid: undefined, hostname: undefined },
      {
        level: 30,
        time: undefined,
        pid: undefined,
        hostname: undefined,
        provider: 'stripe',
        eventId: 'evt_1',
        statusCode: 200,
        ackMs: 1.5,
        counts: { received: 2 },
        at: '1970-01-01T00:00:00.000Z',
        msg: 'delivery acknowledged',
      },
    );
  });
});
