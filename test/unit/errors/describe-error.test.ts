import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { describeError, StoreUnavailableError } from '../../../src/errors.js';
import { createLogger } from '../../../src/observability/logger.js';

describe('describeError: an error with the causes that say what happened', () => {
  test('fetch puts the reason in its cause', () => {
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9'), { code: 'ECONNREFUSED' });
    assert.equal(describeError(new TypeError('fetch failed', { cause: refused })), 'fetch failed: connect ECONNREFUSED 127.0.0.1:9');
  });

  test('a cause the message already says is not said twice, at any depth', () => {
    const driver = new Error('connect ECONNREFUSED 127.0.0.1:3306');
    const unavailable = new StoreUnavailableError(`database unavailable: ${driver.message}`, { cause: driver });
    assert.equal(describeError(unavailable), 'database unavailable: connect ECONNREFUSED 127.0.0.1:3306');
    assert.equal(describeError(new Error('migration failed', { cause: unavailable })), 'migration failed: database unavailable: connect ECONNREFUSED 127.0.0.1:3306');
  });

  test('an AggregateError without a message (a connection tried on each address) says what each attempt met', () => {
    const attempts = new AggregateError([new Error('connect ECONNREFUSED ::1:3306'), new Error('connect ECONNREFUSED 127.0.0.1:3306')], '');
    assert.equal(describeError(attempts), 'connect ECONNREFUSED ::1:3306; connect ECONNREFUSED 127.0.0.1:3306');
    assert.equal(describeError(Object.assign(new Error(''), { code: 'ETIMEDOUT' })), 'ETIMEDOUT');
  });

  test('anything thrown, and a cause that points back at its error', () => {
    assert.equal(describeError('a string'), 'a string');
    assert.equal(describeError(undefined), 'undefined');
    const loop = new Error('outer');
    loop.cause = new Error('inner', { cause: loop });
    assert.equal(describeError(loop), 'outer: inner');
  });

  test("the logger's err field carries the same text", () => {
    const lines: Array<{ err: { message: string } }> = [];
    const logger = createLogger('info', { write: (line: string) => void lines.push(JSON.parse(line) as { err: { message: string } }) });
    const driver = new Error('connect ECONNREFUSED 127.0.0.1:3306');
    logger.warn({ err: new StoreUnavailableError(`database unavailable: ${driver.message}`, { cause: driver }) }, 'failed');
    logger.warn({ err: new TypeError('fetch failed', { cause: new Error('getaddrinfo ENOTFOUND fulfilment.internal') }) }, 'failed');
    assert.deepEqual(
      lines.map((line) => line.err.message),
      ['database unavailable: connect ECONNREFUSED 127.0.0.1:3306', 'fetch failed: getaddrinfo ENOTFOUND fulfilment.internal'],
    );
  });
});
