import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { selectEventRows } from '../../../src/db/event-rows.js';
import { openStore } from '../../../src/store/open-store.js';
import type { KyselyInboxStore } from '../../../src/store/kysely-store.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { TestClock } from '../../support/harness.js';
import { BACKENDS, looseDb, migrateTo } from '../../support/older-schema.js';

/**
 * Migration 0024 moves every event's payload and headers out of webhook_events into its body row: on
 * a database with events written at 0023, including one whose migration stopped part way.
 */
/** More than one of the migration's copy batches. */
const EVENTS = 4500;
const databases = await createTestDatabases();

/** Bytes that a copy through the wrong type or encoding would change: multi-byte text, a NUL escape, a long body. */
function payloadOf(i: number): string {
  if (i === 7) return JSON.stringify({ id: `evt_${i}`, pad: 'é😀'.repeat(40_000) });
  return JSON.stringify({ id: `evt_${i}`, note: `é😀 "quoted" \\ \u0000 ${i}` });
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`migration 0024: event bodies moved to their own rows (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let store: KyselyInboxStore;
    let applied: string[];

    before(async () => {
      store = openStore((database as TestDatabase).url, { poolSize: 2, clock: new TestClock() });
      await migrateTo(store, backend, '0023_fewer_event_indexes');
      const rows = Array.from({ length: EVENTS }, (_, i) => ({
        provider: 'stripe',
        event_id: `evt_${i}`,
        event_type: 'payment_intent.succeeded',
        payload: payloadOf(i),
        headers: JSON.stringify({ 'stripe-signature': `t=1,v1=${i}` }),
        status: i % 3 === 0 ? 'received' : 'processed',
        attempts: i % 3 === 0 ? 0 : 1,
        next_attempt_at: i % 3 === 0 ? '2026-12-01 00:00:00.000' : null,
        created_at: '2026-12-01 00:00:00.000',
      }));
      for (let start = 0; start < rows.length; start += 500) {
        await looseDb(store)
          .insertInto('webhook_events')
          .values(rows.slice(start, start + 500))
          .execute();
      }
      // As a run of 0024 that stopped after its first batch left it (MySQL has no transactional DDL).
      await sql`create table webhook_event_bodies (event_row_id ${BACKENDS[backend].columnTypes.id} primary key not null, payload ${BACKENDS[backend].columnTypes.longText} not null, headers ${BACKENDS[backend].columnTypes.longText} not null)`.execute(
        store.db,
      );
      await sql`insert into webhook_event_bodies (event_row_id, payload, headers) select id, payload, headers from webhook_events where id <= 2000`.execute(store.db);
      applied = await store.migrate();
    });
    after(async () => {
      await store?.close();
      await (database as TestDatabase).drop();
    });

    test('every event has its body, byte for byte, once; webhook_events keeps no payload or headers', async () => {
      assert.deepEqual(applied.slice(0, 1), ['0024_event_bodies'], 'the migration ran, first of those after 0023');
      const events = await selectEventRows(store.db).orderBy('id').execute();
      assert.equal(events.length, EVENTS);
      for (const [i, event] of events.entries()) {
        assert.equal(event.event_id, `evt_${i}`);
        assert.ok(event.payload === payloadOf(i), `evt_${i}: payload byte for byte`);
        assert.equal(event.headers, JSON.stringify({ 'stripe-signature': `t=1,v1=${i}` }));
      }
      const bodies = await store.db
        .selectFrom('webhook_event_bodies')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      assert.equal(Number(bodies.n), EVENTS, 'one body per event');
      const columns = (await store.db.introspection.getTables()).find((table) => table.name === 'webhook_events')!.columns.map((column) => column.name);
      assert.ok(!columns.includes('payload') && !columns.includes('headers'), columns.join(', '));
    });

    test('an event recorded before the migration is claimed with its payload and headers', async () => {
      const due = await store.findEvent('stripe', 'evt_3');
      const claimed = await store.claim(due!.id, 'worker', 30_000);
      assert.deepEqual(claimed?.event.payload, JSON.parse(payloadOf(3)));
      assert.deepEqual(claimed?.event.headers, { 'stripe-signature': 't=1,v1=3' });
    });
  });
}
