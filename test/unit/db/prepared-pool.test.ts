import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { MysqlPoolConnection } from 'kysely';
import type { Pool } from 'mysql2';
import { MAX_PREPARED_PARAMETERS, preparingPool } from '../../../src/db/mysql/prepared-pool.js';

/** A mysql2 pool of one connection whose `execute` answers as `onExecute` says; records what ran how. */
function stubPool(onExecute: (callback: (error: unknown, result?: unknown) => void) => void) {
  const calls: string[] = [];
  const connection = {
    execute(sql: string, _values: unknown[], callback: (error: unknown, result?: unknown) => void) {
      calls.push(`execute ${sql}`);
      onExecute(callback);
    },
    query(sql: string, _values: unknown[], callback?: (error: unknown, result?: unknown) => void) {
      calls.push(`query ${sql}`);
      if (!callback) return { stream: () => 'stream' };
      callback(null, [{ via: 'text' }]);
    },
    release: () => calls.push('release'),
  };
  const pool = { getConnection: (callback: (error: unknown, c: unknown) => void) => callback(null, connection), end: (callback: (e: unknown) => void) => callback(null) };
  return { pool: preparingPool(pool as unknown as Pool), calls };
}

// The driver's errors pass through as they came (typed unknown by kysely's pool interface).
/* eslint-disable @typescript-eslint/no-unnecessary-type-assertion */
const connectionOf = (pool: ReturnType<typeof preparingPool>) =>
  new Promise<MysqlPoolConnection>((resolve, reject) => pool.getConnection((error, c) => (error ? reject(error as Error) : resolve(c))));
const run = (connection: MysqlPoolConnection, sql: string, values: unknown[]) =>
  new Promise((resolve, reject) => connection.query(sql, values, (error, result) => (error ? reject(error as Error) : resolve(result))));
/* eslint-enable @typescript-eslint/no-unnecessary-type-assertion */

test('statements with values are executed prepared; those without, with too many values, and streams run as text', async () => {
  const { pool, calls } = stubPool((callback) => callback(null, [{ via: 'prepared' }]));
  const connection = await connectionOf(pool);
  assert.deepEqual(await run(connection, 'select ?', [1]), [{ via: 'prepared' }]);
  assert.deepEqual(await run(connection, 'begin', []), [{ via: 'text' }]);
  assert.deepEqual(await run(connection, 'insert many', new Array(MAX_PREPARED_PARAMETERS + 1).fill('x')), [{ via: 'text' }], 'too many values to keep prepared');
  assert.deepEqual(await run(connection, 'insert some', new Array(MAX_PREPARED_PARAMETERS).fill('x')), [{ via: 'prepared' }]);
  connection.query('select ?', [2]);
  connection.release();
  assert.deepEqual(calls, ['execute select ?', 'query begin', 'query insert many', 'execute insert some', 'query select ?', 'release']);
  assert.equal(await connectionOf(pool), connection, 'one wrapper per connection, as kysely keys its state by it');
});

test('a statement the server will not prepare (limit reached, unsupported) runs as text instead', async () => {
  for (const errno of [1461, 1295]) {
    const { pool, calls } = stubPool((callback) => callback(Object.assign(new Error('cannot prepare'), { errno })));
    assert.deepEqual(await run(await connectionOf(pool), 'insert ?', ['x']), [{ via: 'text' }], `errno ${errno}`);
    assert.deepEqual(calls, ['execute insert ?', 'query insert ?']);
  }
});

test("any other error is the statement's own and is not run again", async () => {
  const lockTimeout = Object.assign(new Error('lock wait timeout'), { errno: 1205 });
  const { pool, calls } = stubPool((callback) => callback(lockTimeout));
  await assert.rejects(run(await connectionOf(pool), 'insert ?', ['x']), (error) => error === lockTimeout);
  assert.deepEqual(calls, ['execute insert ?']);
});

test('a value the driver refuses by throwing (undefined) fails the statement instead of leaving it hanging', async () => {
  const { pool } = stubPool(() => {
    throw new TypeError('Bind parameters must not contain undefined');
  });
  await assert.rejects(run(await connectionOf(pool), 'insert ?', [undefined]), /must not contain undefined/);
});
