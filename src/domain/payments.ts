import { sql, type Insertable, type Selectable } from 'kysely';
import { paymentKey, wherePayments } from '../store/payment-locks.js';
import { perBatch } from '../store/complete.js';
import type { DbTime, PaymentsTable } from '../db/schema.js';
import { caseWhen } from '../db/sql-case.js';
import type { BusinessTransaction, CompletionBatch } from '../store/inbox-store.js';
import { metadataOf, statesBefore, type PaymentEvent, type PaymentMetadata, type PaymentState } from '../model/payment-event.js';

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
  /** The event filled in details the payment lacked (user, course, amount, metadata keys, ...). */
  enriched: boolean;
  /** The state the payment was in before the event; null when the event created it. */
  previous: PaymentState | null;
  /** The payment as it stands after the event, once the transaction commits. */
  payment: Payment;
}

type Details = Pick<Payment, 'user_id' | 'course_id' | 'email' | 'amount' | 'currency'>;
const DETAILS = ['user_id', 'course_id', 'email', 'amount', 'currency'] as const satisfies ReadonlyArray<keyof Details>;

type PaymentKey = Pick<Payment, 'provider' | 'payment_id'>;

const PAYMENT_COLUMNS = ['provider', 'payment_id', 'status', ...DETAILS, 'metadata', 'created_at', 'updated_at'] as const satisfies ReadonlyArray<keyof PaymentRow>;

/** What one event changes in an existing payment: each write stays conditional on what it found. */
interface PaymentUpdate extends PaymentKey {
  /** The state it moves to, from any of `earlier`; null when it only fills in details. */
  state: PaymentState | null;
  earlier: PaymentState[];
  /** Details the payment lacked, each filled only while still empty. */
  filled: Partial<Details>;
  /** Metadata keys it lacked added: the text written, only while the stored text is still `from`. */
  metadata: { from: string | null; to: string } | null;
  now: DbTime;
}

/**
 * Applies a payment event forward-only (docs/design.md, invariant 4). Events of one payment are processed
 * one at a time (the transaction locks the payment first), so the payment is read once and written at most once; the write
 * is still conditional (an earlier state, a missing detail), so that even concurrent writers could
 * only move the payment forward and fill what is empty. A stale event still completes missing
 * details: a late event may be the only one that carries the customer's metadata.
 *
 * The payments of a completion batch, one event each, are read together by the batch's first event
 * and written together at the batch's end (`batch.atCommit`): one read, at most one insert and one
 * update for the whole batch. Until then the `payments` table does not show the change;
 * `PaymentChange.payment` does.
 */
export async function advancePayment(tx: BusinessTransaction, provider: string, event: PaymentEvent, now: DbTime, batch: CompletionBatch): Promise<PaymentChange> {
  const key = { provider, payment_id: event.paymentId };
  const details: Details = { user_id: event.userId, course_id: event.courseId, email: event.email, amount: event.amountMinor, currency: event.currency };
  const shared = batch.payments.some((p) => p.provider === provider && p.paymentId === event.paymentId) ? paymentsOfBatch(batch, tx) : null;
  let current = shared ? (await shared.read).get(paymentKey(provider, event.paymentId)) : await readPayment(tx, key);
  if (!current) {
    const created: PaymentRow = { ...key, ...details, status: event.state, metadata: metadataText(event.metadata), created_at: now, updated_at: now };
    if (shared) {
      shared.inserts.push(created);
      return { applied: true, enriched: false, previous: null, payment: toPayment(created) };
    }
    if (await insertPayments(tx, [created])) return { applied: true, enriched: false, previous: null, payment: toPayment(created) };
    // Created by another writer since the read: this event's transaction holds no lock on the payment.
    current = (await readPayment(tx, key))!;
  }

  const earlier = statesBefore(event.state);
  const applied = earlier.includes(current.status);
  const filled: Partial<Details> = Object.fromEntries(DETAILS.filter((column) => details[column] !== null && current[column] === null).map((column) => [column, details[column]]));
  const metadata = addedMetadata(current.metadata, event.metadata);
  const enriched = Object.keys(filled).length > 0 || metadata !== null;
  if (!applied && !enriched) return { applied, enriched, previous: current.status, payment: toPayment(current) };

  const update: PaymentUpdate = { ...key, state: applied ? event.state : null, earlier, filled, metadata, now };
  if (shared) shared.updates.push(update);
  else await updatePayments(tx, [update]);
  const updated: PaymentRow = { ...current, ...filled, metadata: metadata?.to ?? current.metadata, ...(applied ? { status: event.state } : {}), updated_at: now };
  return { applied, enriched, previous: current.status, payment: toPayment(updated) };
}

function metadataText(metadata: PaymentMetadata): string | null {
  return Object.keys(metadata).length === 0 ? null : JSON.stringify(metadata);
}

/** Reads stored metadata; text that is not a JSON object (written by hand, say) reads as none. */
export function storedMetadata(text: string | null): PaymentMetadata {
  if (text === null) return {};
  try {
    return metadataOf(JSON.parse(text));
  } catch {
    return {};
  }
}

/** The stored metadata with the keys it lacked added from the event's, or null when it lacks none. */
function addedMetadata(stored: string | null, carried: PaymentMetadata): PaymentUpdate['metadata'] {
  const current = storedMetadata(stored);
  const added = Object.entries(carried).filter(([name]) => !Object.hasOwn(current, name));
  return added.length === 0 ? null : { from: stored, to: JSON.stringify({ ...current, ...Object.fromEntries(added) }) };
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
