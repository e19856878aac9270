import type { Generated, Kysely, Migration } from 'kysely';

/** PayU's events and payments keyed by the merchant's transaction id (see rekeyPayuByTransaction). */
export function payuTransactionKeys(): Migration {
  return { up: rekeyPayuByTransaction };
}

/**
 * Migration 0006: PayU events and payments were keyed by `mihpayid`, which PayU's reverse hash does
 * not cover, so a callback replayed with it edited passed as another payment. They are keyed by the
 * merchant's `txnid` (hashed) now; this rewrites what was stored under the old keys, from each stored
 * callback's own fields, so that a redelivery after the upgrade is a duplicate:
 *
 * - events: `mihpayid:status` becomes `txnid:status`, and their payment `txnid`. Several attempts of
 *   one transaction with one status (failed attempts, or a forged replay) had keys of their own; the
 *   first keeps `txnid:status`, each other one `txnid:status:mihpayid`.
 * - payments of those attempts become one payment per transaction: the highest state reported, each
 *   detail from the first attempt that had it.
 * - orders, enrollments, payment leases and outbox rows (keys and the payment id in their payload)
 *   follow, where the transaction has none yet. A second one (a second order written by a forged
 *   replay) keeps its old payment id, for an operator to look at.
 *
 * Archived events are not in the database, so their keys stay as they were. Each step looks at what
 * is stored now, so a run that stopped half-way (MySQL runs it outside a transaction) can run again.
 * The formats of the time are spelled out here: a migration must not change when the code does.
 */
export async function rekeyPayuByTransaction(db: Kysely<TablesAt0006>): Promise<void> {
  for (let after = 0; ;) {
    const rows: StoredEvent[] = await db
      .selectFrom('webhook_events')
      .select(['id', 'event_id', 'payload', 'payment_id'])
      .where('provider', '=', 'payu')
      .where('id', '>', after)
      .orderBy('id')
      .limit(PAGE)
      .execute();
    if (rows.length === 0) return;
    after = Number(rows.at(-1)!.id);
    const attempts = new Map<string, string>();
    for (const row of rows) {
      const callback = callbackOf(row.payload);
      if (!callback) continue;
      if (callback.mihpayid !== '' && callback.mihpayid !== callback.txnid) attempts.set(callback.mihpayid, callback.txnid);
      await rekeyEvent(db, row, callback);
    }
    for (const [mihpayid, txnid] of attempts) await movePayment(db, mihpayid, txnid);
  }
}

const PAGE = 500;
/** VARCHAR(255) keys at 0006. */
const MAX_KEY = 255;
const STATE_ORDER = ['created', 'failed', 'authorized', 'captured', 'refunded'];
const DETAILS = ['user_id', 'course_id', 'email', 'amount', 'currency'] as const;
const EFFECT_PREFIXES = ['receipt', 'fulfilment', 'fulfilment-cancel'];

/** The tables as this migration reads and writes them, as they were at 0006 (not as the code has them now). */
interface TablesAt0006 {
  webhook_events: { id: Generated<number>; provider: string; event_id: string; payload: string; payment_id: string | null };
  payments: {
    id: Generated<number>;
    provider: string;
    payment_id: string;
    status: string;
    user_id: string | null;
    course_id: string | null;
    email: string | null;
    amount: number | null;
    currency: string | null;
  };
  orders: { id: Generated<number>; provider: string; payment_id: string };
  enrollments: { id: Generated<number>; provider: string; payment_id: string };
  payment_leases: { id: Generated<number>; provider: string; payment_id: string };
  outbox: { id: Generated<number>; idempotency_key: string; payload: string; depends_on_key: string | null };
}

interface StoredEvent {
  id: number;
  event_id: string;
  payload: string;
  payment_id: string | null;
}

interface Callback {
  txnid: string;
  status: string;
  mihpayid: string;
}

function callbackOf(payload: string): Callback | null {
  let fields: unknown;
  try {
    fields = JSON.parse(payload);
  } catch {
    return null;
  }
  if (typeof fields !== 'object' || fields === null) return null;
  const field = (name: string) => {
    const value = (fields as Record<string, unknown>)[name];
    return typeof value === 'string' ? value.trim() : '';
  };
  const callback = { txnid: field('txnid'), status: field('status').toLowerCase(), mihpayid: field('mihpayid') };
  return callback.txnid === '' || callback.status === '' ? null : callback;
}

async function rekeyEvent(db: Kysely<TablesAt0006>, row: StoredEvent, { txnid, status, mihpayid }: Callback): Promise<void> {
  const key = `${txnid}:${status}`;
  if (row.event_id === key || key.length > MAX_KEY) return;
  const taken = await db.selectFrom('webhook_events').select('id').where('provider', '=', 'payu').where('event_id', '=', key).executeTakeFirst();
  // mihpayid tells a transaction's attempts apart; every one stored before had one, the row id is a fallback.
  const eventId = taken ? `${key}:${mihpayid || row.id}` : key;
  if (eventId === row.event_id || eventId.length > MAX_KEY) return;
  await db
    .updateTable('webhook_events')
    .set({ event_id: eventId, payment_id: row.payment_id === null ? null : txnid })
    .where('id', '=', row.id)
    .execute();
}

/** One attempt's payment and what hangs on it, moved to its transaction. */
async function movePayment(db: Kysely<TablesAt0006>, mihpayid: string, txnid: string): Promise<void> {
  const attempt = await db.selectFrom('payments').selectAll().where('provider', '=', 'payu').where('payment_id', '=', mihpayid).executeTakeFirst();
  if (attempt) {
    const transaction = await db.selectFrom('payments').selectAll().where('provider', '=', 'payu').where('payment_id', '=', txnid).executeTakeFirst();
    if (!transaction) {
      await db.updateTable('payments').set({ payment_id: txnid }).where('id', '=', attempt.id).execute();
    } else {
      const status = STATE_ORDER.indexOf(attempt.status) > STATE_ORDER.indexOf(transaction.status) ? attempt.status : transaction.status;
      const details = Object.fromEntries(DETAILS.map((column) => [column, transaction[column] ?? attempt[column]]));
      await db
        .updateTable('payments')
        .set({ ...details, status })
        .where('id', '=', transaction.id)
        .execute();
      await db.deleteFrom('payments').where('id', '=', attempt.id).execute();
    }
  }
  await db.updateTable('enrollments').set({ payment_id: txnid }).where('provider', '=', 'payu').where('payment_id', '=', mihpayid).execute();
  for (const table of ['orders', 'payment_leases'] as const) {
    const existing = await db.selectFrom(table).select('id').where('provider', '=', 'payu').where('payment_id', '=', txnid).executeTakeFirst();
    if (!existing) await db.updateTable(table).set({ payment_id: txnid }).where('provider', '=', 'payu').where('payment_id', '=', mihpayid).execute();
  }
  // The lock row under the old key, when one under the new key was kept: the next claim makes rows
  // again, and a process of this version holds nothing in them across the upgrade (0021 removes the
  // lease columns an older process wrote).
  await db.deleteFrom('payment_leases').where('provider', '=', 'payu').where('payment_id', '=', mihpayid).execute();
  for (const prefix of EFFECT_PREFIXES) await moveEffect(db, `${prefix}:payu:${mihpayid}`, `${prefix}:payu:${txnid}`, txnid);
}

async function moveEffect(db: Kysely<TablesAt0006>, from: string, to: string, txnid: string): Promise<void> {
  if (to.length > MAX_KEY) return;
  const row = await db.selectFrom('outbox').select(['id', 'payload']).where('idempotency_key', '=', from).executeTakeFirst();
  if (!row || (await db.selectFrom('outbox').select('id').where('idempotency_key', '=', to).executeTakeFirst())) return;
  await db
    .updateTable('outbox')
    .set({ idempotency_key: to, payload: withPaymentId(row.payload, txnid) })
    .where('id', '=', row.id)
    .execute();
  await db.updateTable('outbox').set({ depends_on_key: to }).where('depends_on_key', '=', from).execute();
}

function withPaymentId(payload: string, paymentId: string): string {
  try {
    const effect = JSON.parse(payload) as unknown;
    if (typeof effect === 'object' && effect !== null && 'paymentId' in effect) return JSON.stringify({ ...effect, paymentId });
  } catch {
    // Left as it is: it is not the course platform's effect.
  }
  return payload;
}
