import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { MAX_PREPARED_PER_CONNECTION, preparingPool } from '../../../src/db/postgres/prepared-pool.js';
import { openStore } from '../../../src/store/open-store.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { TestClock } from '../../support/harness.js';

const database = await createTestDatabase('postgres');

describe('the PostgreSQL backend: settings warned about at start, prepared statements', { skip: 'skip' in database && database.skip }, () => {
  after(() => (database as TestDatabase).drop());

  test('synchronous_commit off: one warning, and the store works all the same; on: none', async () => {
    const url = (database as TestDatabase).url;
    const off = openStore(`${url}?options=${encodeURIComponent('-c synchronous_commit=off')}`, { poolSize: 1, clock: new TestClock() });
    const on = openStore(url, { poolSize: 1, clock: new TestClock() });
    try {
      await off.migrate();
      const [warning, ...others] = await off.settingWarnings();
      assert.match(warning ?? '', /synchronous_commit is off: an acknowledged event can be lost if the database server crashes/);
      assert.deepEqual(others, []);
      assert.deepEqual(await on.settingWarnings(), []);
      const recorded = await off.record({ provider: 'stripe', eventId: 'evt_async', eventType: 't', payload: '{}', headers: {} });
      assert.equal(recorded.outcome, 'recorded');
    } finally {
      await off.close();
      await on.close();
    }
  });

  test('a statement with values is prepared on its connection once seen twice, up to the bound; one seen once is not', async () => {
    const pool = new pg.Pool({ connectionString: (database as TestDatabase).url, max: 1 });
    const client = await preparingPool(pool).connect();
    try {
      const preparedNames = async () => (await client.query<{ name: string }>("select name from pg_prepared_statements where name like 'wi\\_%'", [])).rows.map((r) => r.name);
      await client.query('select $1::int + 1 as n', [1]);
      assert.deepEqual(await preparedNames(), [], 'seen once');
      const again = await client.query<{ n: number }>('select $1::int + 1 as n', [2]);
      assert.equal(again.rows[0]!.n, 3);
      assert.equal((await preparedNames()).length, 1, 'seen twice');
      await client.query('select $1::int + 1 as n', [3]);
      assert.equal((await preparedNames()).length, 1, 'the same name again');
      for (let shape = 0; shape < MAX_PREPARED_PER_CONNECTION + 5; shape++) {
        for (let run = 0; run < 2; run++) await client.query(`select $1::int + ${shape} as n`, [run]);
      }
      assert.equal((await preparedNames()).length, MAX_PREPARED_PER_CONNECTION, 'no more than the bound');
    } finally {
      client.release();
      await pool.end();
    }
  });

  test('a select * is never prepared, so a column added to its table breaks nothing', async () => {
    const pool = new pg.Pool({ connectionString: (database as TestDatabase).url, max: 1 });
    const client = await preparingPool(pool).connect();
    try {
      await client.query('create table star_select (id int primary key, note text)', []);
      await client.query("insert into star_select values (1, 'one')", []);
      for (let run = 0; run < 2; run++) await client.query('select * from star_select where id = $1', [1]);
      await client.query('alter table star_select add column added int', []);
      assert.deepEqual((await client.query('select * from star_select where id = $1', [1])).rows, [{ id: 1, note: 'one', added: null }]);
      assert.deepEqual((await client.query("select name from pg_prepared_statements where name like 'wi\\_%'", [])).rows, []);
    } finally {
      await client.query('drop table if exists star_select', []);
      client.release();
      await pool.end();
    }
  });

  test('a prepared statement whose result type changed fails once, and its connection is discarded, not reused', async () => {
    const pool = new pg.Pool({ connectionString: (database as TestDatabase).url, max: 1 });
    const preparing = preparingPool(pool);
    const selectAll = 'select id, note from stale_plan where id = $1';
    try {
      await pool.query('create table stale_plan (id int primary key, note text)');
      await pool.query("insert into stale_plan values (1, 'one')");
      const first = await preparing.connect();
      const backend = async (client: typeof first) => (await client.query<{ pid: number }>('select pg_backend_pid() as pid', [])).rows[0]!.pid;
      const firstPid = await backend(first);
      for (let run = 0; run < 2; run++) await first.query(selectAll, [1]);
      await first.query('alter table stale_plan alter column note type varchar(10)', []);
      await assert.rejects(first.query(selectAll, [1]), /cached plan must not change result type/);
      first.release();

      const second = await preparing.connect();
      try {
        assert.notEqual(await backend(second), firstPid, 'a fresh connection');
        for (let run = 0; run < 2; run++) assert.deepEqual((await second.query(selectAll, [1])).rows, [{ id: 1, note: 'one' }]);
      } finally {
        second.release();
      }
    } finally {
      await pool.query('drop table if exists stale_plan');
      await pool.end();
    }
  });
});
