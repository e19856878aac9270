import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql, type Generated, type Kysely } from 'kysely';
import { serviceDomains } from '../../../src/service/domains.js';
import { coursePlatform } from '../../../src/course-platform/index.js';
import { createInbox, definePaymentDomain, writeOutbox, type Inbox, type InboxDatabase, type OutboxMessage, type PaymentDomain, type PaymentMetadata } from '../../../src/index.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness, testConfig } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const databases = await createTestDatabases();
const upgrades = await createTestDatabases();

/** A team's own table, as its handlers and its queries know it. */
interface GrantsTable {
  id: Generated<number>;
  payment_key: string;
  plan: string;
  seats: string | null;
}
interface TeamDatabase extends InboxDatabase {
  grants: GrantsTable;
}

/** What the team's handler saw, and what its own transport delivered. */
const seen: { metadata: PaymentMetadata[]; delivered: OutboxMessage[] } = { metadata: [], delivered: [] };

const grants = definePaymentDomain<TeamDatabase>({
  name: 'grants',
  migrations: {
    '0001_grants': {
      async up(db: Kysely<unknown>) {
        await db.schema
          .createTable('grants')
          .addColumn('id', 'integer', (c) => c.primaryKey().autoIncrement())
          .addColumn('payment_key', 'varchar(255)', (c) => c.notNull().unique())
          .addColumn('plan', 'varchar(64)', (c) => c.notNull())
          .addColumn('seats', 'varchar(16)')
          .execute();
      },
    },
  },
  handlers: {
    captured: [
      async (context) => {
        const { tx, payment } = context;
        seen.metadata.push(payment.metadata);
        const key = `${payment.provider}:${payment.payment_id}`;
        await tx
          .insertInto('grants')
          .orIgnore()
          .values({ payment_key: key, plan: payment.metadata.plan ?? 'basic', seats: payment.metadata.seats ?? null })
          .execute();
        writeOutbox(context, { kind: 'grant_notice', key: `grant:${key}`, payload: { key, plan: payment.metadata.plan } });
      },
    ],
  },
  transports: {
    grant_notice: {
      async deliver(message) {
        seen.delivered.push(message);
        return { status: 'sent', outcome: 'noted' };
      },
    },
  },
});

async function tablesOf(db: Kysely<InboxDatabase>): Promise<string[]> {
  return (await db.introspection.getTables()).map((table) => table.name);
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`a team's own domain: its table, its migration, its handler and transport, no course tables (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let harness: Harness;

    before(async () => {
      db = database as TestDatabase;
      seen.metadata.length = 0;
      seen.delivered.length = 0;
      harness = await Harness.start(db.url, { SWEEP_INTERVAL_MS: '50' }, { domains: [grants] });
    });
    after(async () => {
      await harness?.close();
      await db?.drop();
    });

    test("the team's migration ran with the inbox's, recorded under its domain; the course platform's tables were not created", async () => {
      const tables = await tablesOf(harness.db);
      assert.ok(tables.includes('grants'), tables.join(', '));
      assert.ok(!tables.includes('orders') && !tables.includes('enrollments'), tables.join(', '));
      const names = (await sql<{ name: string }>`select name from schema_migrations`.execute(harness.db)).rows.map((row) => row.name);
      assert.ok(names.includes('grants/0001_grants') && names.includes('0001_webhook_events'), names.join(', '));
    });

    test('a duplicated, concurrent delivery: one grant, one notice, the whole metadata in the handler', async () => {
      const delivery = stripeDelivery(
        stripePaymentEvent('evt_grant_1', 'payment_intent.succeeded', 'pi_grant_1', { object: { metadata: { plan: 'team', seats: '5', region: 'eu' } } }),
      );
      const answers = await Promise.all(Array.from({ length: 8 }, () => harness.post(delivery)));
      assert.ok(answers.every((answer) => answer.status === 200));
      await harness.waitFor('the notice delivered', async () => seen.delivered.length > 0);
      await harness.waitFor(
        'the notice marked sent',
        async () => (await harness.db.selectFrom('outbox').select('status').where('kind', '=', 'grant_notice').executeTakeFirst())?.status === 'sent',
      );
      const rows = await harness.db.withTables<{ grants: GrantsTable }>().selectFrom('grants').select(['payment_key', 'plan', 'seats']).execute();
      assert.deepEqual(rows, [{ payment_key: 'stripe:pi_grant_1', plan: 'team', seats: '5' }]);
      assert.deepEqual(
        seen.delivered.map((message) => [message.idempotencyKey, message.payload]),
        [['grant:stripe:pi_grant_1', { key: 'stripe:pi_grant_1', plan: 'team' }]],
      );
      assert.deepEqual(seen.metadata, [{ plan: 'team', seats: '5', region: 'eu' }]);
    });
  });

  const upgrade = upgrades[backend];
  describe(`the course platform's tables follow its use (${backend})`, { skip: 'skip' in upgrade && upgrade.skip }, () => {
    let db: TestDatabase;
    const opened: Inbox[] = [];
    /** As the service migrates (its domains by COURSE_PLATFORM), or with the domains given. */
    const migrate = async (env: Record<string, string>, domains?: PaymentDomain[]) => {
      const config = testConfig(db.url, env);
      const inbox = createInbox(config, { domains: domains ?? serviceDomains(config) });
      opened.push(inbox);
      return { applied: await inbox.store.migrate(), tables: await tablesOf(inbox.database), inbox };
    };

    before(() => {
      db = upgrade as TestDatabase;
    });
    after(async () => {
      for (const inbox of opened) await inbox.stop(0);
      await db?.drop();
    });

    test('off: no course tables; on: created; off again: the database is fine and keeps them; on again: nothing to do', async () => {
      const off = await migrate({ COURSE_PLATFORM: 'false' });
      assert.ok(!off.tables.includes('orders'), off.tables.join(', '));
      const on = await migrate({});
      assert.deepEqual(on.applied, ['course-platform/0014_orders_and_enrollments']);
      assert.ok(on.tables.includes('orders') && on.tables.includes('enrollments'));
      const offAgain = await migrate({ COURSE_PLATFORM: 'false' });
      assert.deepEqual([offAgain.applied, await offAgain.inbox.store.pendingMigrations()], [[], []]);
      assert.ok(offAgain.tables.includes('orders'), 'kept');
      assert.deepEqual((await migrate({}, [coursePlatform])).applied, []);
    });

    test('an installation whose 0002 created the course tables keeps them, rows and all', async () => {
      // As the first releases left it: the course tables made by 0002, no record of the course platform's own migration.
      await sql`delete from schema_migrations where name = ${'course-platform/0014_orders_and_enrollments'}`.execute(opened[0]!.database);
      const now = '2026-01-01 00:00:00.000';
      await opened[0]!.database
        .withTables<{ orders: { provider: string; payment_id: string; status: string; created_at: string; updated_at: string } }>()
        .insertInto('orders')
        .values({ provider: 'stripe', payment_id: 'pi_from_before', status: 'paid', created_at: now, updated_at: now })
        .execute();
      const upgraded = await migrate({});
      assert.deepEqual(upgraded.applied, ['course-platform/0014_orders_and_enrollments']);
      const orders = await sql<{ payment_id: string }>`select payment_id from orders`.execute(upgraded.inbox.database);
      assert.deepEqual(
        orders.rows.map((row) => row.payment_id),
        ['pi_from_before'],
      );
    });

    test('domain names are checked: two of one name, or a name that is no name, fail at once', () => {
      const named = (name: string) => definePaymentDomain({ name });
      assert.throws(() => createInbox(testConfig(db.url), { domains: [named('dup'), named('dup')] }), /two domains are named "dup"/);
      assert.throws(() => createInbox(testConfig(db.url), { domains: [named('Bad Name')] }), /domain name "Bad Name"/);
    });
  });
}
