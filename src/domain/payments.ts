import { sql, type Insertable, type Selectable } from 'kysely';
import { paymentKey, wherePayments } from '../store/payment-locks.js';
import { perBatch } from '../store/complete.js';
import type { DbTime, PaymentsTable } from '../db/schema.js';
import { caseWhen } from '../db/sql-case.js';
import type { BusinessTransaction, CompletionBatch } from '../store/inbox-store.js';
import { statesBefore, type PaymentEvent, type PaymentMetadata, type PaymentState } from '../model/payment-event.js';
import { DETAILS, planPaymentChange, storedMetadata, type PaymentDetails, type PaymentPlan } from './payment-change.js';

/** A payment row as stored: the metadata is JSON text. */
type PaymentRow = Omit<Selectable<PaymentsTable>, 'id'>;

/** A payment as the domain sees it: keyed by provider and the provider's payment id. */
export type Payment = Omit<PaymentRow, 'metadata'> & {
  /** Every key any of its events carried; a key keeps the value it was first seen with. */
  metadata: PaymentMetadata;
};

export interface PaymentChange {
  /** The event moved the payment forward (or created it). */
  applied: boolean;
  /** The event filled in details the payment lacked (e-mail, amount, metadata keys, ...). */
  enriched: boolean;
  /** The state the payment was in before the event; null when the event created it. */
  previous: PaymentState | null;
  /** The payment as it stands after the event, once the transaction commits. */
  payment: Payment;
  /** What the event did to the payment, as its outcome is stored. */
  outcome: PaymentPlan['outcome'];
}

type PaymentKey = Pick<Payment, 'provider' | 'payment_id'>;

const PAYMENT_COLUMNS = ['provider', 'payment_id', 'status', ...DETAILS, 'metadata', 'created_at', 'updated_at'] as const satisfies ReadonlyArray<keyof PaymentRow>;

/** What one event changes in an existing payment: each write stays conditional on what it found. */
interface PaymentUpdate extends PaymentKey {
  /** The state it moves to, from any of `earlier`; null when it only fills in details. */
  state: PaymentState | null;
  earlier: PaymentState[];
  /** Details the payment lacked, each filled only while still empty. */
  filled: Partial<PaymentDetails>;
  /** Metadata keys it lacked added: the text written, only while the stored text is still `from`. */
  metadata: PaymentPlan['metadata'];
  now: DbTime;
}

/**
 * Applies a payment event forward-only, as planPaymentChange decides. Events of one payment are
 * processed one at a time (the transaction locks the payment first), so the payment is read once and
 * written at most once; the write is still conditional (an earlier state, a missing detail), so that
 * even concurrent writers could only move the payment forward and fill what is empty.
 *
 * The payments of a completion batch, one event each, are read together by the batch's first event
 * and written together at the batch's end (`batch.atCommit`): one read, at most one insert and one
 * update for the whole batch. Until then the `payments` table does not show the change;
 * `PaymentChange.payment` does.
 */
export async function advancePayment(tx: BusinessTransaction, provider: string, event: PaymentEvent, now: DbTime, batch: CompletionBatch): Promise<PaymentChange> {
  const key = { provider, payment_id: event.paymentId };
  const shared = batch.payments.some((p) => p.provider === provider && p.paymentId === event.paymentId) ? paymentsOfBatch(batch, tx) : null;
  let current = shared ? (await shared.read).get(paymentKey(provider, event.paymentId)) : await readPayment(tx, key);
  if (!current) {
    const plan = planPaymentChange(null, event);
    const created: PaymentRow = { ...key, ...plan.after, created_at: now, updated_at: now };
    const change: PaymentChange = { applied: true, enriched: false, previous: null, payment: toPayment(created), outcome: plan.outcome };
    if (shared) {
      shared.inserts.push(created);
      return change;
    }
    if (await insertPayments(tx, [created])) return change;
    // Created by another writer since the read: this event's transaction holds no lock on the payment.
    current = (await readPayment(tx, key))!;
  }

  const plan = planPaymentChange(current, event);
  const change = { applied: plan.moves, enriched: plan.detailsCompleted, previous: plan.from, outcome: plan.outcome };
  if (!plan.moves && !plan.detailsCompleted) return { ...change, payment: toPayment(current) };

  const update: PaymentUpdate = { ...key, state: plan.moves ? plan.to : null, earlier: statesBefore(plan.to), filled: plan.filled, metadata: plan.metadata, now };
  if (shared) shared.updates.push(update);
  else await updatePayments(tx, [update]);
  return { ...change, payment: toPayment({ ...current, ...plan.after, updated_at: now }) };
}

function toPayment(row: PaymentRow): Payment {
  return { ...row, metadata: storedMetadata(row.metadata) };
}

function readPayment(tx: BusinessTransaction, key: PaymentKey): Promise<PaymentRow | undefined> {
  return tx.selectFrom('payments').select(PAYMENT_COLUMNS).where('provider', '=', key.provider).where('payment_id', '=', key.payment_id).executeTakeFirst();
}

/** True when every row was inserted, none of them already there. */
async function insertPayments(tx: BusinessTransaction, payments: Array<Insertable<PaymentsTable>>): Promise<boolean> {
  const inserted = await tx.insertInto('payments').orIgnore().values(payments).executeTakeFirst();
  return Number(inserted.numInsertedOrUpdatedRows) === payments.length;
}

/** One UPDATE for any number of payments: each row gets its own values, under its own conditions. */
async function updatePayments(tx: BusinessTransaction, updates: PaymentUpdate[]): Promise<void> {
  await tx
    .updateTable('payments')
    .set((eb) => {
      const isPayment = (u: PaymentKey) => eb.and([eb('provider', '=', u.provider), eb('payment_id', '=', u.payment_id)]);
      const set: Record<string, unknown> = {
        updated_at: caseWhen(
          updates.map((u) => [isPayment(u), u.now]),
          sql.ref('updated_at'),
        ),
      };
      const moving = updates.filter((u) => u.state !== null);
      if (moving.length > 0)
        set.status = caseWhen(
          moving.map((u) => [eb.and([isPayment(u), eb('status', 'in', u.earlier)]), u.state]),
          sql.ref('status'),
        );
      for (const column of DETAILS) {
        const filling = updates.filter((u) => u.filled[column] !== undefined);
        if (filling.length > 0)
          set[column] = caseWhen(
            filling.map((u) => [isPayment(u), eb.fn.coalesce(column, eb.val(u.filled[column]))]),
            sql.ref(column),
          );
      }
      // Compare-and-set on the text read: a key another writer added in between is never lost.
      const merging = updates.filter((u): u is PaymentUpdate & { metadata: NonNullable<PaymentUpdate['metadata']> } => u.metadata !== null);
      if (merging.length > 0)
        set.metadata = caseWhen(
          merging.map((u) => [eb.and([isPayment(u), u.metadata.from === null ? eb('metadata', 'is', null) : eb('metadata', '=', u.metadata.from)]), u.metadata.to]),
          sql.ref('metadata'),
        );
      return set;
    })
    .where(wherePayments(updates.map((u) => ({ provider: u.provider, paymentId: u.payment_id }))))
    .execute();
}

/** The payments a completion batch has locked: read by its first event, written at its commit. */
interface BatchPayments {
  read: Promise<Map<string, PaymentRow>>;
  inserts: PaymentRow[];
  updates: PaymentUpdate[];
}

/**
 * Payments are read and written once per completion batch, not once per event. Each payment has one
 * event in the batch, and only that event writes its row, so a row read ahead is
 * still the row when its event comes to use it, and its write can wait for the commit.
 */
const paymentsOfBatch = perBatch<BatchPayments>(
  (batch, tx) => ({
    read: tx
      .selectFrom('payments')
      .select(PAYMENT_COLUMNS)
      .where(wherePayments(batch.payments))
      .execute()
      .then((found) => new Map(found.map((row): [string, PaymentRow] => [paymentKey(row.provider, row.payment_id), row]))),
    inserts: [],
    updates: [],
  }),
  async (tx, { inserts, updates }) => {
    // A row created since the read by a writer that does not take the lock (an operator's tool): the batch is
    // abandoned, and each of its events, completed alone, reads its payment again.
    if (inserts.length > 0 && !(await insertPayments(tx, inserts))) throw new Error('a payment was created outside its lock during the batch');
    if (updates.length > 0) await updatePayments(tx, updates);
  },
);
