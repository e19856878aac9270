import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import Database from 'better-sqlite3';
import { Kysely, sql, SqliteDialect } from 'kysely';
import type { InboxDatabase } from '../../../src/db/schema.js';
import { paddedToPowerOfTwo, wherePayments } from '../../../src/store/payment-locks.js';
import type { PaymentRef } from '../../../src/store/inbox-store.js';

const db = new Kysely<InboxDatabase>({ dialect: new SqliteDialect({ database: new Database(':memory:') }) });
after(() => db.destroy());

const refs = (provider: string, ...ids: string[]): PaymentRef[] => ids.map((paymentId) => ({ provider, paymentId }));
const matching = (payments: PaymentRef[]) => db.selectFrom('payments').select(['provider', 'payment_id']).where(wherePayments(payments)).orderBy('provider').orderBy('payment_id');

test('padded to the next power of two with the last value; a power of two stays as it is', () => {
  assert.deepEqual(paddedToPowerOfTwo(['a']), ['a']);
  assert.deepEqual(paddedToPowerOfTwo(['a', 'b', 'c']), ['a', 'b', 'c', 'c']);
  assert.deepEqual(paddedToPowerOfTwo(['a', 'b', 'c', 'd']), ['a', 'b', 'c', 'd']);
  assert.equal(paddedToPowerOfTwo(Array.from({ length: 33 }, (_, i) => i)).length, 64);
});

test('batches of different mixes by provider share one statement text', () => {
  const text = (payments: PaymentRef[]) => matching(payments).compile().sql;
  const mixes = [
    [...refs('stripe', 's1', 's2', 's3'), ...refs('razorpay', 'r1', 'r2')],
    [...refs('razorpay', 'r1', 'r2'), ...refs('stripe', 's1', 's2', 's3', 's4')],
    [...refs('payu', 'p1', 'p2'), ...refs('stripe', 's1', 's2', 's1', 's3')],
  ];
  assert.equal(new Set(mixes.map(text)).size, 1, mixes.map(text).join('\n'));
  assert.notEqual(text(refs('stripe', 's1')), text(refs('stripe', 's1', 's2')));
});

test('matches exactly the payments named, whatever the padding repeats', async () => {
  await sql`create table payments (provider text not null, payment_id text not null)`.execute(db);
  await db
    .insertInto('payments')
    .values(
      ['stripe:s1', 'stripe:s2', 'stripe:s3', 'stripe:x', 'razorpay:r1', 'razorpay:s1', 'payu:p1'].map((key) => {
        const [provider, payment_id] = key.split(':') as [string, string];
        return { provider, payment_id } as never;
      }),
    )
    .execute();
  const rows = await matching([...refs('stripe', 's1', 's2', 's3'), ...refs('razorpay', 'r1'), ...refs('stripe', 's2')]).execute();
  assert.deepEqual(rows, [
    { provider: 'razorpay', payment_id: 'r1' },
    { provider: 'stripe', payment_id: 's1' },
    { provider: 'stripe', payment_id: 's2' },
    { provider: 'stripe', payment_id: 's3' },
  ]);
});
