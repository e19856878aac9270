import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
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

describe('createLogger writes stdout asynchronously and loses no line', () => {
  const logger = new URL('../../../src/observability/logger.ts', import.meta.url).href;
  /** Runs `script` (an ES module, `logger` the module's URL) in a process of its own; its stdout's lines. */
  const linesOf = (script: string) => {
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script.replaceAll('LOGGER', JSON.stringify(logger))], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    });
    assert.equal(child.status, 0, child.stderr);
    return child.stdout.split('\n').filter((line) => line !== '');
  };

  test('a process that exits at once, lines still buffered, writes every one of them first', () => {
    const lines = linesOf(`
      const { createLogger } = await import(LOGGER);
      const logger = createLogger('info');
      for (let i = 0; i < 20000; i++) logger.info({ i }, 'line');
      process.exit(0);
    `);
    assert.equal(lines.length, 20000);
    assert.deepEqual(
      lines.map((line) => (JSON.parse(line) as { i: number }).i),
      Array.from({ length: 20000 }, (_, i) => i),
      'in the order logged',
    );
  });

  test('a thread that ends itself writes its lines first, once it has awaited flushed()', () => {
    // A thread does not inherit the --import tsx hooks on Node 20: it registers them itself.
    const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
    const lines = linesOf(`
      import { Worker } from 'node:worker_threads';
      const body = \`import(\${JSON.stringify(${tsx})}).then(({ register }) => register()).then(async () => {
        const { createLogger, flushed } = await import(\${JSON.stringify(LOGGER)});
        const logger = createLogger('info');
        for (let i = 0; i < 5000; i++) logger.info({ i }, 'thread line');
        await flushed(logger);
        process.exit(0);
      })\`;
      const thread = new Worker(body, { eval: true });
      await new Promise((resolve) => thread.on('exit', resolve));
    `);
    assert.equal(lines.filter((line) => line.includes('thread line')).length, 5000);
  });

  test('a line logged alone reaches stdout while the process runs on, not only when it exits', async () => {
    const child = spawn(process.execPath, [
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      `const { createLogger } = await import(${JSON.stringify(logger)}); createLogger('info').info('alone'); setTimeout(() => {}, 10000);`,
    ]);
    try {
      const first = await new Promise<string>((resolve, reject) => {
        child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString('utf8')));
        child.once('exit', (code) => reject(new Error(`exited (${code}) before writing its line`)));
      });
      assert.match(first, /"msg":"alone"/);
      assert.equal(child.exitCode, null, 'still running');
    } finally {
      child.kill();
    }
  });
});
