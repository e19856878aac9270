import { sql, type ExpressionBuilder, type Kysely, type Selectable } from 'kysely';
import { LeaseLostError } from '../errors.js';
import type { ProviderName } from '../providers/provider.js';
import { groupBy } from './batcher.js';
import { caseById, caseWhen } from './sql-case.js';
import { heldBy, newLease } from './lease.js';
import { releasePaymentLeases, type PaymentRef } from './payment-leases.js';
import { fromDbTime, toDbTime, type DbTime, type InboxDatabase, type WebhookEventsTable } from './schema.js';
import type { BusinessTransaction, ClaimedEvent, CompletionBatch, CompletionWork, Lease } from './store.js';

/**
 * The workers' writes for many events at once (see Batcher): a batch of claims is one transaction of
 * a few statements, a batch of completions one transaction and one commit, whatever the batch size.
 * Processing an event is otherwise a dozen round trips of its own, and on a database that answers in
 * a fraction of a millisecond those round trips, not the work, are what a worker spends its time on.
 */

export interface CompletionRequest {
  lease: Lease;
  work: CompletionWork;
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
 *
 * The events are read first, outside the transaction; each lease is then taken only if the row still
 * has the attempt count that was read, so the read stays true for every event claimed: a concurrent
 * claim in between makes this one miss, never double.
 */
export async function claimBatch(db: Kysely<InboxDatabase>, ids: number[], owner: string, leaseMs: number, now: Date): Promise<Map<number, ClaimedEvent>> {
  const nowDb = toDbTime(now);
  const rows = await db.selectFrom('webhook_events').selectAll().where('id', 'in', ids).execute();
  const candidates = new Map<string, EventRow>();
  for (const row of rows.filter((r) => isDue(r, nowDb)).sort((a, b) => a.id - b.id)) {
    // One event per payment: the others wait for it, as they would for another worker.
    const key = row.payment_id === null ? `event\u0000${row.id}` : paymentKey(row.provider, row.payment_id);
    if (!candidates.has(key)) candidates.set(key, row);
  }
  if (candidates.size === 0) return new Map();
  const payments = [...candidates.values()].map(paymentOf).filter((p): p is PaymentRef => p !== null);
  // Created before the transaction, on their own: an INSERT IGNORE that meets an existing row takes a
  // shared lock, and two claims each holding one while waiting to update the row would deadlock.
  if (payments.length > 0) {
    await db.insertInto('payment_leases').orIgnore().values(payments.map((p) => ({ provider: p.provider, payment_id: p.paymentId }))).execute();
  }

  const { token, expiresAt, columns } = newLease(owner, leaseMs, now);
  const claimed = await db.transaction().execute(async (tx) => {
    let events = [...candidates.values()];
    const holders = events.filter((row) => row.payment_id !== null);
    if (holders.length > 0) {
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
        if (events.length === 0) return [];
      }
    }
    const updated = await tx
      .updateTable('webhook_events')
      .set((eb) => ({ status: 'processing', attempts: eb('attempts', '+', 1), ...columns }))
      .where((eb) => eb.or(events.map((row) => eb.and([eb('id', '=', row.id), eb('attempts', '=', row.attempts)]))))
      .where((eb) => eb.or([eb('status', '=', 'received'), eb.and([eb('status', 'in', ['failed', 'processing']), eb('next_attempt_at', '<=', nowDb)])]))
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) !== events.length) {
      const rows = await tx.selectFrom('webhook_events').select(['id', 'lease_token']).where('id', 'in', events.map((row) => row.id)).execute();
      const leased = new Set(rows.filter((r) => r.lease_token === token).map((r) => r.id));
      const missed = events.filter((row) => !leased.has(row.id));
      events = events.filter((row) => leased.has(row.id));
      const freed = missed.map(paymentOf).filter((p): p is PaymentRef => p !== null);
      if (freed.length > 0) {
        await tx.updateTable('payment_leases').set({ event_row_id: null, lease_token: null, lease_expires_at: null }).where(wherePayments(freed)).where('lease_token', '=', token).execute();
      }
    }
    return events;
  });

  return new Map(
    claimed.map((row): [number, ClaimedEvent] => {
      const attempts = row.attempts + 1;
      const lease: Lease = { id: row.id, owner, token, expiresAt, attempts, payment: paymentOf(row) };
      const stored = readStored(row);
      return [
        row.id,
        {
          lease,
          // Read as processing and due: its lease had expired, its worker died or stalled.
          takeover: row.status === 'processing',
          ...(stored.unreadable === undefined ? {} : { unreadable: stored.unreadable }),
          event: {
            id: row.id,
            provider: row.provider as ProviderName,
            eventId: row.event_id,
            eventType: row.event_type,
            payload: stored.payload,
            headers: stored.headers,
            attempts,
            createdAt: fromDbTime(row.created_at),
          },
        },
      ];
    }),
  );
}

/**
 * A claimed row's stored JSON, or why it cannot be read. Read after the claim committed, so a row
 * that cannot be read must not throw: it would leave every event claimed with it in `processing`,
 * claimed again at each lease expiry and failing again. It fails alone instead (see ClaimedEvent).
 */
function readStored(row: EventRow): { payload: unknown; headers: Record<string, string>; unreadable?: string } {
  const parse = (what: 'payload' | 'headers') => {
    try {
      return { value: JSON.parse(row[what]) as unknown };
    } catch (error) {
      return { problem: `its ${what} (${Buffer.byteLength(row[what])} bytes stored) is not valid JSON: ${(error as Error).message}` };
    }
  };
  const payload = parse('payload');
  const headers = parse('headers');
  const problems = [payload.problem, headers.problem].filter((problem) => problem !== undefined);
  if (problems.length > 0) return { payload: null, headers: {}, unreadable: `the stored event cannot be read: ${problems.join('; ')}` };
  return { payload: payload.value, headers: headers.value as Record<string, string> };
}

/** Thrown inside a completion batch to roll it back; its events then complete one by one. */
class BatchAbandoned extends Error {}

/**
 * Runs every request's work and marks its event processed, all in one transaction: the payment
 * leases released and the events fenced by one statement each. The whole batch stands or falls
 * together: if one work fails or one lease was lost, it rolls back and returns null, and the caller
 * runs each request alone so that a failure stays with its own event.
 */
export async function completeBatch(db: Kysely<InboxDatabase>, requests: CompletionRequest[], now: () => Date): Promise<string[] | null> {
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
      await fence(tx, requests.map((r) => r.lease), outcomes, toDbTime(now()));
      return outcomes;
    });
  } catch (error) {
    if (error instanceof BatchAbandoned || error instanceof LeaseLostError) return null;
    throw error;
  }
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

/** For each payment, its event due the longest (one that waited while another held the payment). */
export async function nextDueEvents(db: Kysely<InboxDatabase>, payments: PaymentRef[], now: DbTime): Promise<Map<string, number>> {
  const rows = await db
    .selectFrom('webhook_events')
    .select((eb) => ['provider', 'payment_id', eb.fn.min('id').as('id')])
    .where(wherePayments(payments))
    .where('next_attempt_at', '<=', now)
    .groupBy(['provider', 'payment_id'])
    .execute();
  return new Map(rows.map((row) => [paymentKey(row.provider, row.payment_id!), Number(row.id)]));
}
