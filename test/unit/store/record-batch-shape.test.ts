import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DummyDriver, Kysely, MysqlAdapter, MysqlIntrospector, MysqlQueryCompiler, type CompiledQuery } from 'kysely';
import { newBodyRow, newEventRow } from '../../../src/db/recording/new-event.js';
import { newEventsInsert } from '../../../src/db/recording/returning.js';
import { MAX_RECORD_BATCH, recordBatchShape } from '../../../src/store/record.js';
import { MAX_PREPARED_PARAMETERS } from '../../../src/db/mysql/prepared-pool.js';
import type { InboxDatabase } from '../../../src/db/schema.js';

const sizes = Array.from({ length: MAX_RECORD_BATCH }, (_, i) => i + 1);

test('record batches take one of 16 sizes, each at least two thirds of the events waiting', () => {
  for (const size of sizes) {
    const shape = recordBatchShape(size);
    assert.ok(Number.isInteger(shape) && shape >= 1 && shape <= size, `${size} -> ${shape}`);
    assert.ok(shape * 3 >= size * 2, `${size} -> ${shape} leaves more than a third`);
  }
  assert.deepEqual([...new Set(sizes.map(recordBatchShape))], [1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64, 96, 128]);
});

test("the largest record batch's statement is small enough to run prepared on MySQL", async () => {
  const statements: CompiledQuery[] = [];
  const db = new Kysely<InboxDatabase>({
    dialect: {
      createAdapter: () => new MysqlAdapter(),
      createDriver: () => new DummyDriver(),
      createIntrospector: (db) => new MysqlIntrospector(db),
      createQueryCompiler: () => new MysqlQueryCompiler(),
    },
    log: (event) => {
      statements.push(event.query);
    },
  });
  const event = (i: number) => ({ provider: 'stripe' as const, eventId: `evt_${i}`, eventType: 'charge.succeeded', payload: '{}', headers: {} });
  const insert = newEventsInsert(db);
  const requests = Array.from({ length: MAX_RECORD_BATCH }, (_, i) => ({ event: event(i), paymentId: null, receivedAt: '2026-12-02 00:00:00.000' }));
  await insert.events(requests.map(newEventRow));
  await insert.bodies(requests.map((request, i) => newBodyRow(i + 1, request.event)));
  assert.equal(statements.length, 2);
  const parameters = Math.max(...statements.map((statement) => statement.parameters.length));
  assert.ok(parameters <= MAX_PREPARED_PARAMETERS, `${parameters} values in a batch of ${MAX_RECORD_BATCH}, prepared up to ${MAX_PREPARED_PARAMETERS}`);
  assert.ok(parameters > MAX_PREPARED_PARAMETERS * 0.9, 'the bound is not far above what the batches need');
});
