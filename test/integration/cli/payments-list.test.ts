import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import type { CoursePlatformDatabase } from '../../../src/course-platform/schema.js';
import { cli } from '../../support/cli.js';
import { createTestDatabases, migratedDatabase, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { HOSTILE_PAYMENT_ID, insertListedPayments, LISTED_NEWEST_FIRST } from '../../support/payment-fixtures.js';

const databases = await createTestDatabases();

interface Listed {
  payments: Array<{ paymentId: string }>;
  more: boolean;
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`payments list (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let inspect: Kysely<CoursePlatformDatabase>;
    const env = () => ({ DATABASE_URL: db.url });
    const listed = async (...args: string[]) => {
      const { code, output } = await cli(['payments', 'list', '--json', ...args], env());
      assert.equal(code, 0, output);
      const answer = JSON.parse(output) as Listed;
      return { ids: answer.payments.map((p) => p.paymentId), more: answer.more };
    };

    before(async () => {
      db = database as TestDatabase;
      inspect = await migratedDatabase(db.url);
      await insertListedPayments(inspect);
    });
    after(async () => {
      await inspect?.destroy();
      await db?.drop();
    });

    test('a table newest first by update; JSON named as the admin API names it', async () => {
      const [table, json] = await Promise.all([cli(['payments', 'list'], env()), cli(['payments', 'list', '--json', '--limit', '3'], env())]);
      assert.equal(table.code, 0, table.output);
      const lines = table.output.trimEnd().split('\n');
      assert.match(lines[0]!, /^PROVIDER +PAYMENT +STATUS +AMOUNT \(MINOR UNITS\) +CURRENCY +UPDATED \(UTC\)$/);
      assert.match(lines[1]!, /^stripe +pi_pl_a +captured +4900 +USD +2020-03-02 09:00:00\.000$/);
      assert.match(lines.at(-1)!, /^stripe +pi_pl_e +created +- +- +2020-03-01 09:00:00\.000$/);
      assert.deepEqual(
        lines.slice(1).map((line) => line.split(/ {2,}/)[1]),
        LISTED_NEWEST_FIRST,
      );
      assert.equal(json.code, 0, json.output);
      assert.deepEqual(JSON.parse(json.output), {
        payments: [
          { provider: 'stripe', paymentId: 'pi_pl_a', status: 'captured', amount: 4900, currency: 'USD', updatedAt: '2020-03-02T09:00:00.000Z' },
          { provider: 'payu', paymentId: 'txn_pl_d', status: 'failed', amount: 700, currency: 'INR', updatedAt: '2020-03-01T11:00:00.000Z' },
          { provider: 'razorpay', paymentId: 'pay_pl_c', status: 'captured', amount: 50000, currency: 'INR', updatedAt: '2020-03-01T11:00:00.000Z' },
        ],
        more: true,
      });
    });

    test('filters: --provider, --state, --since/--until, --email and --metadata, each exactly', async () => {
      const [byState, byTime, byEmail, byMetadata, byOddKey, byQuotes] = await Promise.all([
        listed('--provider', 'stripe', '--state', 'captured'),
        listed('--since', '2020-03-01T10:00:00Z', '--until', '2020-03-02', '--limit', '2'),
        listed('--email', 'alice@example.com'),
        listed('--metadata', 'order_id=o-1'),
        listed('--metadata', 'x"order_id=o-1'),
        listed('--metadata', 'greeting=say "hi"'),
      ]);
      assert.deepEqual(byState, { ids: ['pi_pl_a', 'pi_pl_f'], more: false });
      assert.deepEqual(byTime, { ids: ['txn_pl_d', 'pay_pl_c'], more: true });
      assert.deepEqual(byEmail.ids, ['pi_pl_a'], 'the e-mail only: not a metadata value, not another case');
      assert.deepEqual(byMetadata.ids, ['pi_pl_a'], 'that key with that value: not O-1, not a key that only ends in order_id');
      assert.deepEqual(byOddKey.ids, ['pi_pl_e']);
      assert.deepEqual(byQuotes.ids, ['pi_pl_f']);
    });

    // The options' parsing is the same over every store: checked once.
    if (backend === 'sqlite')
      test('bad options are usage errors naming the option; an empty result says so; payments show --json takes the same names', async () => {
        const [noValue, badState, none, show] = await Promise.all([
          cli(['payments', 'list', '--metadata', 'order_id'], env()),
          cli(['payments', 'list', '--state', 'processed'], env()),
          cli(['payments', 'list', '--provider', 'payu', '--state', 'refunded'], env()),
          cli(['payments', 'show', 'stripe', HOSTILE_PAYMENT_ID, '--json'], env()),
        ]);
        assert.equal(noValue.code, 2, noValue.output);
        assert.match(noValue.output, /--metadata.*KEY=VALUE/);
        assert.equal(badState.code, 2, badState.output);
        assert.match(badState.output, /--state.*created, failed, authorized, captured, refunded/);
        assert.equal(none.code, 0, none.output);
        assert.equal(none.output.trim(), 'no payments match');
        assert.equal(show.code, 0, show.output);
        const detail = JSON.parse(show.output) as Record<string, unknown>;
        assert.deepEqual(Object.keys(detail), ['provider', 'paymentId', 'payment', 'events', 'moreEvents', 'sections', 'outbox']);
        assert.deepEqual(Object.keys(detail.payment as object), ['provider', 'paymentId', 'status', 'amount', 'currency', 'updatedAt', 'email', 'metadata', 'createdAt']);
      });
  });
}
