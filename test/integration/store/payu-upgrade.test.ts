import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { coursePlatformMigrations } from '../../../src/course-platform/migrations.js';
import { rekeyPayuByTransaction } from '../../../src/db/migrations/0006_payu_transaction_keys.js';
import { openStore } from '../../../src/store/open-store.js';
import type { KyselyInboxStore } from '../../../src/store/kysely-store.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { PROVIDERS_DIR } from '../../support/fixtures.js';
import { Harness, TestClock } from '../../support/harness.js';
import { BACKENDS, looseDb, migrateTo } from '../../support/older-schema.js';
import { payuDelivery } from '../../support/signing.js';

/**
 * Upgrading an installation whose PayU events and payments were stored under `mihpayid` (before
 * issue 27): every row of a database written by that code (test/fixtures/upgrade/, see its
 * `generatedBy`) is loaded at schema 0005, then the store migrates and the same callbacks come again.
 */
const FIXTURE = JSON.parse(readFileSync(path.join(PROVIDERS_DIR, '..', 'upgrade', 'payu-mihpayid-keys.json'), 'utf8')) as Record<string, unknown>;
const TABLES = ['webhook_events', 'payments', 'orders', 'enrollments', 'outbox', 'payment_leases'] as const;
const databases = await createTestDatabases();

/** The callbacks the fixture was written from (same fields, so the same hashes). */
function callback(txnid: string, user: string, mihpayid: string, status: string, unmappedstatus: string) {
  return payuDelivery({
    txnid,
    amount: '499.00',
    productinfo: 'Course',
    firstname: 'Asha',
    email: `${user}@example.com`,
    udf1: user,
    udf2: 'c_upgrade',
    mihpayid,
    status,
    unmappedstatus,
  });
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`PayU keys of an installation upgraded from mihpayid to txnid (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let store: KyselyInboxStore;
    let applied: string[];
    let secondRunChanged: boolean;
    const everything = () => Promise.all(TABLES.map((table) => looseDb(store).selectFrom(table).selectAll().orderBy('id').execute()));
    const rows = async (table: 'webhook_events' | 'payments' | 'orders' | 'enrollments') =>
      (await looseDb(store).selectFrom(table).selectAll().where('provider', '=', 'payu').orderBy('id').execute()) as Array<Record<string, unknown>>;

    before(async () => {
      store = openStore((database as TestDatabase).url, { poolSize: 2, clock: new TestClock() });
      await migrateTo(store, backend, '0005_outbox_dispatch');
      // What 0002 created then besides: the course platform's tables, as its own migration makes them now.
      await coursePlatformMigrations(BACKENDS[backend].columnTypes)['0014_orders_and_enrollments']!.up(store.db);
      for (const table of TABLES) {
        await looseDb(store)
          .insertInto(table)
          .values(FIXTURE[table] as Array<Record<string, unknown>>)
          .execute();
        await BACKENDS[backend].followInsertedIds(store.db, table);
      }
      // 0006 again, on the schema it ran on (0024 later moves the payloads it reads): it must change nothing.
      const upTo0006 = await migrateTo(store, backend, '0006_payu_transaction_keys');
      const snapshot = await everything();
      await rekeyPayuByTransaction(store.db as unknown as Parameters<typeof rekeyPayuByTransaction>[0]);
      secondRunChanged = !isDeepStrictEqual(await everything(), snapshot);
      applied = [...upTo0006.map((result) => result.migrationName), ...(await store.migrate())];
    });
    after(async () => {
      await store?.close();
      await (database as TestDatabase).drop();
    });

    test('the migration keys events by txnid:status; a second attempt with the same status keeps a key of its own', async () => {
      assert.ok(applied.includes('0006_payu_transaction_keys'), applied.join(', '));
      const events = await rows('webhook_events');
      assert.deepEqual(
        events.map((e) => [e.event_id, e.payment_id]),
        [
          ['T100:failure', 'T100'],
          ['T100:success', 'T100'],
          ['T200:failure', 'T200'],
          ['T200:failure:403993715500000444', 'T200'],
          ['T300:success', 'T300'],
          ['T300:success:403993715500000556', 'T300'],
          ['T400:pending', 'T400'],
        ],
      );
      const stripe = await store.findEvent('stripe', 'evt_upgrade_1');
      assert.equal(stripe?.status, 'processed', 'other providers untouched');
    });

    test('one payment per transaction, at the highest state its attempts reported; orders, enrollments and effects follow', async () => {
      assert.deepEqual(
        // The user, recorded before payments kept their metadata, moved there by 0031 under PayU's field.
        (await rows('payments')).map((p) => [p.payment_id, p.status, (JSON.parse(String(p.metadata)) as Record<string, string>).udf1, Number(p.amount)]),
        [
          ['T100', 'captured', 'u100', 49900],
          ['T200', 'failed', 'u200', 49900],
          ['T300', 'captured', 'u300', 49900],
          ['T400', 'created', 'u400', 49900],
        ],
      );
      // The order the forged replay wrote keeps its mihpayid, for an operator to find.
      assert.deepEqual(
        (await rows('orders')).map((o) => o.payment_id),
        ['T100', 'T300', '403993715500000556'],
      );
      assert.deepEqual(
        (await rows('enrollments')).map((e) => e.payment_id),
        ['T100', 'T300'],
      );
      const outbox = await store.db.selectFrom('outbox').select(['idempotency_key', 'payload']).where('idempotency_key', 'like', '%:payu:%').orderBy('id').execute();
      assert.deepEqual(
        outbox.map((o) => [o.idempotency_key, (JSON.parse(o.payload) as { paymentId: string }).paymentId]),
        [
          ['receipt:payu:T100', 'T100'],
          ['fulfilment:payu:T100', 'T100'],
          ['receipt:payu:T300', 'T300'],
          ['fulfilment:payu:T300', 'T300'],
          ['receipt:payu:403993715500000556', '403993715500000556'],
          ['fulfilment:payu:403993715500000556', '403993715500000556'],
        ],
      );
    });

    test('after the upgrade, the same callbacks and copies with an edited mihpayid are duplicates; a new transaction is recorded and processed', async () => {
      const harness = await Harness.start((database as TestDatabase).url);
      try {
        const before = await harness.allCounts();
        const again = [
          callback('T100', 'u100', '403993715500000222', 'success', 'captured'),
          callback('T100', 'u100', '403993715599999999', 'success', 'captured'),
          callback('T200', 'u200', '403993715500000444', 'failure', 'failed'),
          callback('T300', 'u300', '403993715500000557', 'success', 'captured'),
          callback('T400', 'u400', '403993715500000666', 'pending', 'auth'),
        ];
        for (const delivery of again) {
          const answer = await harness.post(delivery);
          assert.deepEqual([answer.status, answer.body.outcome], [200, 'duplicate'], delivery.body.slice(0, 80));
        }
        const fresh = await harness.post(callback('T500', 'u500', '403993715500000777', 'success', 'captured'));
        assert.deepEqual([fresh.status, fresh.body.outcome, fresh.body.eventId], [200, 'recorded', 'T500:success']);
        await harness.waitFor(
          'T500 processed',
          async () => (await harness.db.selectFrom('payments').select('id').where('payment_id', '=', 'T500').executeTakeFirst()) !== undefined,
        );
        await harness.waitUntilProcessed(before.webhook_events + 1);
        const after = await harness.allCounts();
        assert.deepEqual(after, {
          webhook_events: before.webhook_events + 1,
          webhook_event_bodies: before.webhook_event_bodies + 1,
          payments: before.payments + 1,
          orders: before.orders + 1,
          enrollments: before.enrollments + 1,
          outbox: before.outbox + 2,
        });
      } finally {
        await harness.close();
      }
    });

    test('running the migration again changes nothing', () => {
      assert.equal(secondRunChanged, false);
    });
  });
}
