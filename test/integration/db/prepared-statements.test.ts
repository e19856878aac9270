import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql, type Kysely } from 'kysely';
import { createConnection } from 'mysql2/promise';
import { mysqlBackend } from '../../../src/db/mysql/backend.js';
import { openStore } from '../../../src/store/open-store.js';
import type { InboxDatabase } from '../../../src/db/schema.js';
import { createTestDatabase } from '../../support/database.js';
import { TestClock } from '../../support/harness.js';

/**
 * The acknowledgement path's statements run prepared on MariaDB (src/store/mysql/prepared-pool.ts):
 * payloads travel as values, not as escaped text the server parses again.
 */
const database = await createTestDatabase('mysql');

async function statementCounters(db: Kysely<InboxDatabase>): Promise<{ prepared: number; executed: number }> {
  const { rows } = await sql<{ Variable_name: string; Value: string }>`show session status where Variable_name in ('Com_stmt_prepare', 'Com_stmt_execute')`.execute(db);
  const value = (name: string) => Number(rows.find((row) => row.Variable_name === name)?.Value);
  return { prepared: value('Com_stmt_prepare'), executed: value('Com_stmt_execute') };
}

describe('prepared statements (MariaDB)', { skip: 'skip' in database ? database.skip : false }, () => {
  const url = 'skip' in database ? '' : database.url;
  before(async () => {
    const migrating = openStore(url, { poolSize: 1, clock: new TestClock() });
    await migrating.migrate();
    await migrating.close();
  });
  after(async () => {
    if (!('skip' in database)) await database.drop();
  });

  /** One connection, so the session counters are the statements' own. */
  async function runTwice(preparedStatements: boolean) {
    const db = mysqlBackend.connect(url, { poolSize: 1, preparedStatements });
    try {
      const select = (eventId: string) => db.selectFrom('webhook_events').select('id').where('provider', '=', 'stripe').where('event_id', '=', eventId).execute();
      await select('evt_warm_up');
      const start = await statementCounters(db);
      assert.deepEqual(await select('evt_one'), []);
      assert.deepEqual(await select('evt_two'), []);
      const end = await statementCounters(db);
      return { prepared: end.prepared - start.prepared, executed: end.executed - start.executed };
    } finally {
      await db.destroy();
    }
  }

  test('statements with values run prepared, each shape prepared once per connection', async () => {
    assert.deepEqual(await runTwice(true), { prepared: 0, executed: 2 });
  });

  test('without the option they run as text', async () => {
    assert.deepEqual(await runTwice(false), { prepared: 0, executed: 0 });
  });

  test("the store's acknowledgement path records through prepared statements, with the payload byte for byte", async () => {
    const server = await createConnection({ uri: url });
    const globalPrepares = async () => Number(((await server.query("show global status like 'Com_stmt_prepare'"))[0] as Array<{ Value: string }>)[0]!.Value);
    const store = openStore(url, { poolSize: 2, clock: new TestClock() });
    try {
      const before = await globalPrepares();
      const payload = JSON.stringify({ id: 'evt_prepared', note: "quote ' backslash \\ nul \u0000 emoji \u{1F600}" });
      const results = await Promise.all(
        ['evt_prepared', 'evt_prepared_2'].map((eventId) =>
          store.record({ provider: 'stripe', eventId, eventType: 'payment_intent.succeeded', payload, headers: { 'stripe-signature': 't=1' } }),
        ),
      );
      assert.deepEqual(
        results.map((r) => r.outcome),
        ['recorded', 'recorded'],
      );
      assert.ok((await globalPrepares()) > before, 'the record batch was prepared');
      const [rows] = await server.query(
        "select b.payload from webhook_events e join webhook_event_bodies b on b.event_row_id = e.id where e.provider = 'stripe' and e.event_id = 'evt_prepared'",
      );
      assert.equal((rows as Array<{ payload: string }>)[0]?.payload, payload);
      assert.equal((await store.record({ provider: 'stripe', eventId: 'evt_prepared', eventType: 'x', payload, headers: {} })).outcome, 'duplicate');
    } finally {
      await store.close();
      await server.end();
    }
  });
});
