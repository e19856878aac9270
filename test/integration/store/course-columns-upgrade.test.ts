import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { sql } from 'kysely';
import { coursePlatform } from '../../../src/course-platform/course-platform.js';
import { coursePlatformMigrations } from '../../../src/course-platform/migrations.js';
import { buyerOf, coursePlatformSettings } from '../../../src/course-platform/settings.js';
import { storedMetadata } from '../../../src/domain/payment-change.js';
import { composeDomains } from '../../../src/extension/compose-domains.js';
import type { PaymentDomain } from '../../../src/extension/payment-domain.js';
import { openStore } from '../../../src/store/open-store.js';
import type { KyselyInboxStore } from '../../../src/store/kysely-store.js';
import { createTestDatabases, STORE_BACKENDS, type StoreBackendName, type TestDatabase } from '../../support/database.js';
import { PROVIDERS_DIR } from '../../support/fixtures.js';
import { Harness, TestClock, testConfig, waitFor } from '../../support/harness.js';
import { BACKENDS, looseDb, migrateTo } from '../../support/older-schema.js';
import { razorpayDelivery, stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

/**
 * Migration 0031 takes user_id and course_id out of the inbox's payments, on databases written by
 * the code before it (test/fixtures/upgrade/course-columns.json, see its `generatedBy`): one that ran
 * the course platform, one that ran with COURSE_PLATFORM=false. Every value the columns held must be
 * read from the payment's metadata afterwards, as the course platform reads it.
 */
type Row = Record<string, unknown>;
interface Installation {
  schema_migrations: string[];
  [table: string]: Row[] | string[];
}
const FIXTURE = JSON.parse(readFileSync(path.join(PROVIDERS_DIR, '..', 'upgrade', 'course-columns.json'), 'utf8')) as {
  coursePlatform: Installation;
  withoutCoursePlatform: Installation;
};
/** Payments recorded before migration 0013 kept no metadata: these stand for them. */
const WITHOUT_METADATA = ['pi_A1', 'T_A6', 'pay_B2'];
const LAST_ENGINE_MIGRATION = '0030_payment_list_indexes';
const fields = coursePlatformSettings(testConfig('mysql://unused/db'))!.buyerFields;

const databases = { on: await createTestDatabases(), off: await createTestDatabases() };

/** The installation's rows at schema 0030, as its service left them, on a fresh database. */
async function loadInstallation(store: KyselyInboxStore, backend: StoreBackendName, installation: Installation): Promise<void> {
  await migrateTo(store, backend, LAST_ENGINE_MIGRATION);
  if (installation.schema_migrations.includes('course-platform/0014_orders_and_enrollments')) {
    await coursePlatformMigrations(BACKENDS[backend].columnTypes)['0014_orders_and_enrollments']!.up(store.db);
    await looseDb(store).insertInto('schema_migrations').values({ name: 'course-platform/0014_orders_and_enrollments', timestamp: new Date().toISOString() }).execute();
  }
  for (const [table, rows] of Object.entries(installation)) {
    if (table === 'schema_migrations' || rows.length === 0) continue;
    const loaded = (rows as Row[]).map((row) => (table === 'payments' && WITHOUT_METADATA.includes(String(row.payment_id)) ? { ...row, metadata: null } : row));
    await looseDb(store).insertInto(table).values(loaded).execute();
    if (table !== 'webhook_event_bodies') await BACKENDS[backend].followInsertedIds(store.db, table);
  }
}

/** Opens the database with the inbox's migrations and those of `domains`. */
function storeWith(database: TestDatabase, domains: PaymentDomain[]): KyselyInboxStore {
  return openStore(database.url, { poolSize: 2, clock: new TestClock(), migrations: composeDomains(testConfig(database.url), domains).migrations });
}

/** Each payment's user and course, as the course platform reads them from its metadata now; and the metadata. */
async function paymentsAfter(store: KyselyInboxStore) {
  const rows = await store.db.selectFrom('payments').select(['provider', 'payment_id', 'metadata']).orderBy('id').execute();
  return rows.map((row) => ({ paymentId: row.payment_id, metadata: row.metadata, ...buyerOf({ provider: row.provider, metadata: storedMetadata(row.metadata) }, fields) }));
}

/** What the columns held, payment by payment. */
const columnsBefore = (installation: Installation) =>
  (installation.payments as Row[]).map((row) => ({ paymentId: row.payment_id, userId: row.user_id, courseId: row.course_id, metadata: row.metadata }));

async function columnsOf(store: KyselyInboxStore, table: string): Promise<string[]> {
  return (await store.db.introspection.getTables()).find((t) => t.name === table)!.columns.map((column) => column.name);
}

/** The keys the course platform does not read keep their values: nothing else of the metadata changes. */
function assertOtherKeysKept(before: ReturnType<typeof columnsBefore>, after: Awaited<ReturnType<typeof paymentsAfter>>): void {
  for (const [i, payment] of before.entries()) {
    const read = new Set(['user_id', 'course_id', 'udf1', 'udf2']);
    const kept = (text: unknown) => Object.entries(storedMetadata(typeof text === 'string' ? text : null)).filter(([key]) => !read.has(key));
    assert.deepEqual(kept(after[i]!.metadata), kept(WITHOUT_METADATA.includes(String(payment.paymentId)) ? null : payment.metadata), String(payment.paymentId));
  }
}

for (const backend of STORE_BACKENDS) {
  const on = databases.on[backend];
  describe(`migration 0031: an installation that ran the course platform (${backend})`, { skip: 'skip' in on && on.skip }, () => {
    const installation = FIXTURE.coursePlatform;
    let store: KyselyInboxStore;
    let applied: string[];

    before(async () => {
      const loading = storeWith(on as TestDatabase, []);
      await loadInstallation(loading, backend, installation);
      await loading.close();
      store = storeWith(on as TestDatabase, [coursePlatform]);
      applied = await store.migrate();
    });
    after(async () => {
      await store?.close();
      await (on as TestDatabase).drop();
    });

    test('the columns leave payments; every value they held is read from the metadata as the course platform reads it', async () => {
      assert.equal(applied[0], '0031_course_columns_out', 'the installation stood just before migration 0031');
      const columns = await columnsOf(store, 'payments');
      assert.ok(!columns.includes('user_id') && !columns.includes('course_id'), columns.join(', '));
      const before = columnsBefore(installation);
      const after = await paymentsAfter(store);
      assert.deepEqual(
        after.map(({ paymentId, userId, courseId }) => ({ paymentId, userId, courseId })),
        before.map(({ paymentId, userId, courseId }) => ({ paymentId, userId, courseId })),
      );
      // pi_A8's first event carried user_id as no text (true), its capture u_a8: the value acted on wins.
      assert.equal(storedMetadata(after.find((p) => p.paymentId === 'pi_A8')!.metadata).user_id, 'u_a8');
      assertOtherKeysKept(before, after);
      const untouched = before.filter((p) => !WITHOUT_METADATA.includes(String(p.paymentId)) && p.paymentId !== 'pi_A8');
      assert.deepEqual(
        untouched.map((p) => after.find((q) => q.paymentId === p.paymentId)!.metadata),
        untouched.map((p) => p.metadata),
        'a payment whose metadata read its values already is not written',
      );
    });

    test('orders and enrollments are as they were, row for row', async () => {
      for (const table of ['orders', 'enrollments']) {
        const rows = await looseDb(store).selectFrom(table).select(['id', 'provider', 'payment_id', 'user_id', 'course_id', 'status']).orderBy('id').execute();
        const expected = (installation[table] as Row[]).map(({ id, provider, payment_id, user_id, course_id, status }) => ({
          id,
          provider,
          payment_id,
          user_id,
          course_id,
          status,
        }));
        assert.deepEqual(
          rows.map((row) => ({ ...row, id: Number(row.id) })),
          expected,
          table,
        );
      }
    });

    test('a payment created before the upgrade, captured after it by an event that names nobody, is granted to the buyer its columns held', async () => {
      const service = await Harness.start((on as TestDatabase).url);
      try {
        const capture = stripePaymentEvent('evt_a1_succeeded', 'payment_intent.succeeded', 'pi_A1', { object: { metadata: {} } });
        assert.equal((await service.post(stripeDelivery(capture))).status, 200);
        const order = () => service.courseDb.selectFrom('orders').select(['user_id', 'course_id']).where('payment_id', '=', 'pi_A1').executeTakeFirst();
        await waitFor('the order of pi_A1', async () => (await order()) !== undefined);
        assert.deepEqual(await order(), { user_id: 'u_a1', course_id: 'c_a1' });
        const enrollment = await service.courseDb.selectFrom('enrollments').select(['user_id', 'status']).where('payment_id', '=', 'pi_A1').execute();
        assert.deepEqual(enrollment, [{ user_id: 'u_a1', status: 'active' }]);
      } finally {
        await service.close();
      }
    });
  });

  const off = databases.off[backend];
  describe(`migration 0031: an installation that ran with COURSE_PLATFORM=false (${backend})`, { skip: 'skip' in off && off.skip }, () => {
    const installation = FIXTURE.withoutCoursePlatform;
    let store: KyselyInboxStore;
    let applied: string[];

    before(async () => {
      const loading = storeWith(off as TestDatabase, []);
      await loadInstallation(loading, backend, installation);
      await loading.close();
      store = storeWith(off as TestDatabase, []);
      applied = await store.migrate();
    });
    after(async () => {
      await store?.close();
      await (off as TestDatabase).drop();
    });

    test('its course ids (and user ids) are kept in the metadata, under the keys its events carried them in; no course table is made for them', async () => {
      assert.equal(applied[0], '0031_course_columns_out', 'the installation stood just before migration 0031');
      const before = columnsBefore(installation);
      const after = await paymentsAfter(store);
      assert.deepEqual(
        after.map(({ paymentId, userId, courseId }) => ({ paymentId, userId, courseId })),
        before.map(({ paymentId, userId, courseId }) => ({ paymentId, userId, courseId })),
      );
      assert.deepEqual(storedMetadata(after.find((p) => p.paymentId === 'pay_B2')!.metadata), { user_id: 'u_b2', course_id: 'c_b2' }, 'Razorpay: notes.user_id and course_id');
      assert.deepEqual(storedMetadata(after.find((p) => p.paymentId === 'T_B3')!.metadata), { udf1: 'u_b3', udf2: 'c_b3' }, 'PayU: udf1 and udf2');
      assertOtherKeysKept(before, after);
      const tables = (await store.db.introspection.getTables()).map((table) => table.name);
      assert.ok(!tables.includes('orders') && !tables.includes('enrollments'), tables.join(', '));
      assert.deepEqual(await store.pendingMigrations(), []);
    });

    test('turned on later, the course platform grants what the old columns named', async () => {
      const service = await Harness.start((off as TestDatabase).url);
      try {
        const notesless = {
          entity: 'event',
          event: 'payment.captured',
          contains: ['payment'],
          payload: { payment: { entity: { id: 'pay_B2', entity: 'payment', amount: 49900, currency: 'INR', status: 'captured', email: 'u_b2@example.com', notes: [] } } },
          created_at: 1767225600,
        };
        assert.equal((await service.post(razorpayDelivery(notesless, 'evt_b2_captured'))).status, 200);
        const enrollment = () => service.courseDb.selectFrom('enrollments').select(['user_id', 'course_id']).where('payment_id', '=', 'pay_B2').executeTakeFirst();
        await waitFor('the enrollment of pay_B2', async () => (await enrollment()) !== undefined);
        assert.deepEqual(await enrollment(), { user_id: 'u_b2', course_id: 'c_b2' });
        const migrations = await sql<{ name: string }>`select name from schema_migrations where name like ${'course-platform/%'}`.execute(service.db);
        assert.deepEqual(
          migrations.rows.map((row) => row.name),
          ['course-platform/0014_orders_and_enrollments'],
        );
      } finally {
        await service.close();
      }
    });
  });
}
