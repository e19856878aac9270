import { sql, type ExpressionBuilder, type Kysely, type Selectable } from 'kysely';
import { LeaseLostError } from '../errors.js';
import type { ProviderName } from '../providers/provider.js';
import { groupBy } from './batcher.js';
import { caseById, caseWhen } from './sql-case.js';
import { heldBy, newLease } from './lease.js';
import { releasePaymentLeases, type PaymentRef } from './payment-leases.js';
import { fromDbTime, toDbTime, type DbTime, type InboxDatabase, type WebhookEventsTable } from './schema.js';
import type { BusinessTransaction, ClaimedEvent, Completion, CompletionBatch, CompletionWork, Lease } from './store.js';

/**
 * The workers' writes for many events at once (see Batcher): a batch of claims is one transaction of
 * a few statements, a batch of completions one transaction and one commit, whatever the batch size.
 * Processing an event is otherwise a dozen round trips of its own, and on a database that answers in
 * a fraction of a millisecond those round trips, not the work, are what a worker spends its time on.
 */

export interface CompletionRequest {
  lease: Lease;
  work: CompletionWork;
  /** Lease the payment's next due event to the same owner for this long (see takeNextEvents); null: do not. */
  nextLeaseMs: number | null;
}

type EventRow = Selectable<WebhookEventsTable>;

export const paymentKey = (provider: string, paymentId: string) => `${provider}\u0000${paymentId}`;

/** The claim's own condition, read first so that offers of an event that is not due cost no write. */
function isDue(event: Pick<EventRow, 'status' | 'next_attempt_at'>, now: DbTime): boolean {
  if (event.status === 'received') return true;
  return event.status !== 'processed' && event.next_attempt_at !== null && event.next_attempt_at <= now;
}

function paymentOf(row: Pick<EventRow, 'provider' | 'payment_id'>): PaymentRef | null {
  return row.payment_id === null ? null : { provider: row.provider, paymentId: row.payment_id };
}

/** Matches the rows of `payments` (leases, events or payments), grouped by provider so each group is an index range. */
export function wherePayments(payments: PaymentRef[]) {
  return (eb: ExpressionBuilder<InboxDatabase, 'payment_leases' | 'webhook_events' | 'payments'>) =>
    eb.or([...groupBy(payments, (p) => p.provider)].map(([provider, group]) => eb.and([eb('provider', '=', provider), eb('payment_id', 'in', group.map((p) => p.paymentId))])));
}

/**
 * Claims the due events among `ids` for one owner: both leases of each (its payment's and its own) or
 * neither, one event per payment. Returns the claims by id; an event is missing when it was not due,
 * was taken by someone else, or its payment is busy (it is handed on when the payment frees).
 */
export async function claimBatch(db: Kysely<InboxDatabase>, ids: number[], owner: string, leaseMs: number, now: Date): Promise<Map<number, ClaimedEvent>> {
  const nowDb = toDbTime(now);
  // Each event with its payment's lease as committed now: an event whose payment is held is left out
  // here, at no cost, instead of being refused by the transaction. Whoever holds the payment hands it
  // on when done; the transaction still decides for the events that look free.
  const rows = await db
    .selectFrom('webhook_events as e')
    .leftJoin('payment_leases as l', (join) => join.onRef('l.provider', '=', 'e.provider').onRef('l.payment_id', '=', 'e.payment_id'))
    .selectAll('e')
    .select(['l.id as payment_lease_row', 'l.lease_expires_at as payment_held_until'])
    .where('e.id', 'in', ids)
    .execute();
  const candidates = new Map<string, (typeof rows)[number]>();
  for (const row of rows.filter((r) => isDue(r, nowDb) && !(r.payment_held_until !== null && r.payment_held_until > nowDb)).sort((a, b) => a.id - b.id)) {
    // One event per payment: the others wait for it, as they would for another worker.
    const key = row.payment_id === null ? `event\u0000${row.id}` : paymentKey(row.provider, row.payment_id);
    if (!candidates.has(key)) candidates.set(key, row);
  }
  if (candidates.size === 0) return new Map();
  const unseenPayments = [...candidates.values()].filter((row) => row.payment_lease_row === null).map(paymentOf).filter((p): p is PaymentRef => p !== null);
  // Created before the transaction, on their own: an INSERT IGNORE that meets an existing row takes a
  // shared lock, and two claims each holding one while waiting to update the row would deadlock.
  if (unseenPayments.length > 0) {
    await db.insertInto('payment_leases').orIgnore().values(unseenPayments.map((p) => ({ provider: p.provider, payment_id: p.paymentId }))).execute();
  }
  return db.transaction().execute((tx) => leaseEvents(tx, [...candidates.values()], owner, leaseMs, now));
}

/**
 * Leases `rows` (read as due, at most one per payment, each payment's lease row existing) to `owner`
 * under one new lease, inside `tx`. Each event is leased only if it still has the attempt count that
 * was read, so the read stays true for every event leased: a concurrent claim in between makes this
 * one miss, never double. Returns what it leased, by id.
 */
async function leaseEvents(tx: BusinessTransaction, rows: EventRow[], owner: string, leaseMs: number, now: Date): Promise<Map<number, ClaimedEvent>> {
  const nowDb = toDbTime(now);
  const { token, expiresAt, columns } = newLease(owner, leaseMs, now);
  let events = rows;
  const holders = events.filter((row) => row.payment_id !== null);
  if (holders.length > 0) {
    const payments = holders.map(paymentOf) as PaymentRef[];
    // Payment leases first (the lock order every writer keeps); one statement takes every free one.
    const taken = await tx
      .updateTable('payment_leases')
      .set((eb) => ({
        lease_token: token,
        lease_expires_at: columns.lease_expires_at,
        event_row_id: caseWhen(
          holders.map((row) => [eb.and([eb('provider', '=', row.provider), eb('payment_id', '=', row.payment_id!)]), row.id]),
          sql.ref('event_row_id'),
        ),
      }))
      .where(wherePayments(payments))
      .where((eb) => eb.or([eb('lease_token', 'is', null), eb('lease_expires_at', '<=', nowDb)]))
      .executeTakeFirst();
    if (Number(taken.numUpdatedRows) !== payments.length) {
      const held = await tx.selectFrom('payment_leases').select(['provider', 'payment_id', 'lease_token']).where(wherePayments(payments)).execute();
      const ours = new Set(held.filter((p) => p.lease_token === token).map((p) => paymentKey(p.provider, p.payment_id)));
      events = events.filter((row) => row.payment_id === null || ours.has(paymentKey(row.provider, row.payment_id)));
    }
  }
  if (events.length === 0) return new Map();
  const updated = await tx
    .updateTable('webhook_events')
    .set((eb) => ({ status: 'processing', attempts: eb('attempts', '+', 1), ...columns }))
    .where((eb) => eb.or(events.map((row) => eb.and([eb('id', '=', row.id), eb('attempts', '=', row.attempts)]))))
    .where((eb) => eb.or([eb('status', '=', 'received'), eb.and([eb('status', 'in', ['failed', 'processing']), eb('next_attempt_at', '<=', nowDb)])]))
    .executeTakeFirst();
  if (Number(updated.numUpdatedRows) !== events.length) {
    const leasedRows = await tx.selectFrom('webhook_events').select(['id', 'lease_token']).where('id', 'in', events.map((row) => row.id)).execute();
    const leased = new Set(leasedRows.filter((r) => r.lease_token === token).map((r) => r.id));
    const missed = events.filter((row) => !leased.has(row.id));
    events = events.filter((row) => leased.has(row.id));
    const freed = missed.map(paymentOf).filter((p): p is PaymentRef => p !== null);
    if (freed.length > 0) {
      await tx.updateTable('payment_leases').set({ event_row_id: null, lease_token: null, lease_expires_at: null }).where(wherePayments(freed)).where('lease_token', '=', token).execute();
    }
  }

  return new Map(
    events.map((row): [number, ClaimedEvent] => {
      const attempts = row.attempts + 1;
      const lease: Lease = { id: row.id, owner, token, expiresAt, attempts, payment: paymentOf(row) };
      return [
        row.id,
        {
          lease,
          // Read as processing and due: its lease had expired, its worker died or stalled.
          takeover: row.status === 'processing',
          event: {
            id: row.id,
            provider: row.provider as ProviderName,
            eventId: row.event_id,
            eventType: row.event_type,
            payload: JSON.parse(row.payload) as unknown,
            headers: JSON.parse(row.headers) as Record<string, string>,
            attempts,
            createdAt: fromDbTime(row.created_at),
          },
        },
      ];
    }),
  );
}

/**
 * Leases each payment's next due event to the owner of the completion that freed the payment, inside
 * that completion's transaction (after its fence). The events of one payment then follow one another
 * without a hand-off and a claim each, two rounds of batches, which is most of their wait behind the
 * payment's earlier events. Returns the leased events by payment key.
 */
async function takeNextEvents(tx: BusinessTransaction, requests: CompletionRequest[], now: Date): Promise<Map<string, ClaimedEvent>> {
  const handovers = requests.filter((r): r is CompletionRequest & { lease: { payment: PaymentRef }; nextLeaseMs: number } => r.lease.payment !== null && r.nextLeaseMs !== null);
  if (handovers.length === 0) return new Map();
  const nowDb = toDbTime(now);
  const rows = await tx.selectFrom('webhook_events').selectAll().where('id', 'in', nextDueIds(tx, handovers.map((r) => r.lease.payment), nowDb)).execute();
  if (rows.length === 0) return new Map();
  const taken = new Map<string, ClaimedEvent>();
  // One lease per owner and lease time, as claims are (a store may serve several processors in tests).
  for (const group of groupBy(handovers, (r) => `${r.lease.owner}\u0000${r.nextLeaseMs}`).values()) {
    const keys = new Set(group.map((r) => paymentKey(r.lease.payment.provider, r.lease.payment.paymentId)));
    const due = rows.filter((row) => isDue(row, nowDb) && keys.has(paymentKey(row.provider, row.payment_id!)));
    for (const claimed of (await leaseEvents(tx, due, group[0]!.lease.owner, group[0]!.nextLeaseMs, now)).values()) {
      taken.set(paymentKey(claimed.event.provider, claimed.lease.payment!.paymentId), claimed);
    }
  }
  return taken;
}

/** Thrown inside a completion batch to roll it back; its events then complete one by one. */
class BatchAbandoned extends Error {}

/**
 * Runs every request's work and marks its event processed, all in one transaction: the payment
 * leases released and the events fenced by one statement each. The whole batch stands or falls
 * together: if one work fails or one lease was lost, it rolls back and returns null, and the caller
 * runs each request alone (completeAlone) so that a failure stays with its own event.
 */
export async function completeBatch(db: Kysely<InboxDatabase>, requests: CompletionRequest[], now: () => Date): Promise<Completion[] | null> {
  try {
    return await db.transaction().execute(async (tx) => {
      const batch = TransactionBatch.of(requests.map((r) => r.lease));
      const outcomes: string[] = [];
      try {
        for (const { work } of requests) outcomes.push(await work(tx, batch));
        await batch.writeDeferred(tx);
      } catch {
        throw new BatchAbandoned();
      }
      return finishCompletion(tx, requests, outcomes, now());
    });
  } catch (error) {
    if (error instanceof BatchAbandoned || error instanceof LeaseLostError) return null;
    throw error;
  }
}

/** One request in a transaction of its own: its work's failure, or its lost lease, is thrown. */
export async function completeAlone(db: Kysely<InboxDatabase>, request: CompletionRequest, now: () => Date): Promise<Completion> {
  return db.transaction().execute(async (tx) => {
    const batch = TransactionBatch.of([request.lease]);
    const outcome = await request.work(tx, batch);
    await batch.writeDeferred(tx);
    return (await finishCompletion(tx, [request], [outcome], now()))[0]!;
  });
}

/** The end of every completion transaction: the fence, then the hand-over of the freed payments. */
async function finishCompletion(tx: BusinessTransaction, requests: CompletionRequest[], outcomes: string[], now: Date): Promise<Completion[]> {
  await fence(tx, requests.map((r) => r.lease), outcomes, toDbTime(now));
  const next = await takeNextEvents(tx, requests, now);
  return requests.map(({ lease }, i) => ({
    outcome: outcomes[i]!,
    next: (lease.payment && next.get(paymentKey(lease.payment.provider, lease.payment.paymentId))) ?? null,
  }));
}

/** A completion transaction's CompletionBatch; made inside the transaction, so one run again starts afresh. */
export class TransactionBatch implements CompletionBatch {
  private readonly deferred: Array<(tx: BusinessTransaction) => Promise<void>> = [];

  constructor(readonly payments: PaymentRef[]) {}

  static of(leases: Lease[]): TransactionBatch {
    return new TransactionBatch(leases.map((lease) => lease.payment).filter((payment): payment is PaymentRef => payment !== null));
  }

  atCommit(write: (tx: BusinessTransaction) => Promise<void>): void {
    this.deferred.push(write);
  }

  /** The writes deferred by atCommit, in the order they were deferred; each runs once. */
  async writeDeferred(tx: BusinessTransaction): Promise<void> {
    for (const write of this.deferred.splice(0)) await write(tx);
  }
}

/**
 * State that the events of one completion batch build up together and that is written once, at the
 * batch's commit: made by the first event that asks for it, which also defers its write.
 */
export function perBatch<T>(create: (batch: CompletionBatch, tx: BusinessTransaction) => T, write: (tx: BusinessTransaction, state: T) => Promise<void>) {
  const states = new WeakMap<CompletionBatch, T>();
  return (batch: CompletionBatch, tx: BusinessTransaction): T => {
    if (states.has(batch)) return states.get(batch)!;
    const state = create(batch, tx);
    states.set(batch, state);
    batch.atCommit((commitTx) => write(commitTx, state));
    return state;
  };
}

/**
 * Releases the leases' payments and marks their events processed, each only while the lease's own
 * token still holds it (and, for the event, has not expired); any miss throws LeaseLostError, which
 * rolls the transaction back.
 */
export async function fence(tx: BusinessTransaction, leases: Lease[], outcomes: string[], now: DbTime): Promise<void> {
  if (!(await releasePaymentLeases(tx, leases))) throw new LeaseLostError(leases[0]!.id);
  const fenced = await tx
    .updateTable('webhook_events')
    .set({
      status: 'processed',
      outcome: caseById(leases.map((lease, i) => [lease.id, outcomes[i]!])),
      processed_at: now,
      lease_token: null,
      lease_expires_at: null,
      next_attempt_at: null,
      last_error: null,
    })
    .where(heldBy(leases))
    .where('status', '=', 'processing')
    .where('lease_expires_at', '>', now)
    .executeTakeFirst();
  if (Number(fenced.numUpdatedRows) !== leases.length) throw new LeaseLostError(leases[0]!.id);
}

/** For each payment, the id of its event due the longest (one that waited while another held the payment). */
function nextDueIds(db: Kysely<InboxDatabase>, payments: PaymentRef[], now: DbTime) {
  return db
    .selectFrom('webhook_events')
    .select((eb) => eb.fn.min('id').as('id'))
    .where(wherePayments(payments))
    .where('next_attempt_at', '<=', now)
    .groupBy(['provider', 'payment_id']);
}

/** nextDueIds, by payment key. */
export async function nextDueEvents(db: Kysely<InboxDatabase>, payments: PaymentRef[], now: DbTime): Promise<Map<string, number>> {
  const rows = await nextDueIds(db, payments, now).select(['provider', 'payment_id']).execute();
  return new Map(rows.map((row) => [paymentKey(row.provider, row.payment_id!), Number(row.id)]));
}
