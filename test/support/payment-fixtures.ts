import type { Insertable, Kysely } from 'kysely';
import type { CoursePlatformDatabase } from '../../src/course-platform/schema.js';
import type { InboxDatabase, PaymentsTable } from '../../src/db/schema.js';

/** A payment id as hostile as a payload may make it: it must show as text, and link only to its own page. */
export const HOSTILE_PAYMENT_ID = 'pi_pl_<img src=x onerror="window.__pwned = 4">';

/** Three update times, oldest first; several payments share each, so that pages end inside a tie. */
const AT = ['2020-03-01 09:00:00.000', '2020-03-01 11:00:00.000', '2020-03-02 09:00:00.000'] as const;

type Listed = Omit<Insertable<PaymentsTable>, 'created_at' | 'updated_at'> & { at: 0 | 1 | 2 };

/**
 * Payments of every provider and several states, e-mails and metadata, inserted in this order (so
 * their ids rise in it). Metadata that looks alike but is not the same: a value in another case, a
 * key that holds another key's name, a value with quotes.
 */
const LISTED: Listed[] = [
  {
    provider: 'stripe',
    payment_id: 'pi_pl_a',
    status: 'captured',
    amount: 4900,
    currency: 'USD',
    email: 'alice@example.com',
    metadata: '{"order_id":"o-1","note":"<script>window.__pwned = 5</script>"}',
    at: 2,
  },
  { provider: 'stripe', payment_id: 'pi_pl_b', status: 'refunded', amount: 1000, currency: 'USD', email: 'bob@example.com', metadata: '{"order_id":"o-2"}', at: 1 },
  { provider: 'razorpay', payment_id: 'pay_pl_c', status: 'captured', amount: 50000, currency: 'INR', email: 'Alice@Example.com', metadata: '{"order_id":"O-1"}', at: 1 },
  { provider: 'payu', payment_id: 'txn_pl_d', status: 'failed', amount: 700, currency: 'INR', email: null, metadata: '{"udf1":"alice@example.com"}', at: 1 },
  { provider: 'stripe', payment_id: 'pi_pl_e', status: 'created', amount: null, currency: null, email: null, metadata: '{"x\\"order_id":"o-1"}', at: 0 },
  { provider: 'stripe', payment_id: 'pi_pl_f', status: 'captured', amount: 2500, currency: 'EUR', email: 'carol@example.com', metadata: '{"greeting":"say \\"hi\\""}', at: 0 },
  { provider: 'stripe', payment_id: HOSTILE_PAYMENT_ID, status: 'authorized', amount: 100, currency: 'USD', email: null, metadata: null, at: 0 },
];

/** Their ids newest first: by update time, then by id (the later insert first within a time). */
export const LISTED_NEWEST_FIRST = ['pi_pl_a', 'txn_pl_d', 'pay_pl_c', 'pi_pl_b', HOSTILE_PAYMENT_ID, 'pi_pl_f', 'pi_pl_e'];

/** Inserts the listed payments, one at a time so their ids follow the list (a service's connections or a test's own). */
export async function insertListedPayments(db: Kysely<InboxDatabase> | Kysely<CoursePlatformDatabase>): Promise<void> {
  for (const { at, ...payment } of LISTED) {
    await (db as Kysely<InboxDatabase>)
      .insertInto('payments')
      .values({ ...payment, created_at: AT[0], updated_at: AT[at] })
      .execute();
  }
}
