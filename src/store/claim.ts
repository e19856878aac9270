import { sql, type Insertable, type Kysely, type Selectable } from 'kysely';
import { caseWhen } from '../db/sql-case.js';
import { newLease } from '../db/lease.js';
import { fromDbTime, toDbTime, type DbTime, type EventAttemptsTable, type InboxDatabase, type WebhookEventsTable } from '../db/schema.js';
import type { ProviderName } from '../model/delivery.js';
import type { ClaimedEvent, Lease, PaymentRef } from './inbox-store.js';
import { paymentKey, wherePayments } from './payment-leases.js';

/**
 * Claiming events: a batch of claims is one transaction of a few statements, whatever its size. Each
 * claim takes the event's lease and its payment's, or neither.
 */

type EventRow = Selectable<WebhookEventsTable>;

/** The claim's own condition, read first so that offers of an event that is not due cost no write. */
function isDue(event: Pick<EventRow, 'status' | 'next_attempt_at'>, now: DbTime): boolean {
  if (event.status === 'received') return true;
  return event.status !== 'processed' && event.next_attempt_at !== null && event.next_attempt_at <= now;
}

function paymentOf(row: Pick<EventRow, 'provider' | 'payment_id'>): PaymentRef | null {
  return row.payment_id === null ? null : { provider: row.provider, paymentId: row.payment_id };
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
    await db
      .insertInto('payment_leases')
      .orIgnore()
      .values(payments.map((p) => ({ provider: p.provider, payment_id: p.paymentId })))
      .execute();
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
      .set((eb) => ({ status: 'processing', attempts: eb('attempts', '+', 1), claimed_at: nowDb, ...columns }))
      .where((eb) => eb.or(events.map((row) => eb.and([eb('id', '=', row.id), eb('attempts', '=', row.attempts)]))))
      .where((eb) => eb.or([eb('status', '=', 'received'), eb.and([eb('status', 'in', ['failed', 'processing']), eb('next_attempt_at', '<=', nowDb)])]))
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) !== events.length) {
      const rows = await tx
        .selectFrom('webhook_events')
        .select(['id', 'lease_token'])
        .where(
          'id',
          'in',
          events.map((row) => row.id),
        )
        .execute();
      const leased = new Set(rows.filter((r) => r.lease_token === token).map((r) => r.id));
      const missed = events.filter((row) => !leased.has(row.id));
      events = events.filter((row) => leased.has(row.id));
      const freed = missed.map(paymentOf).filter((p): p is PaymentRef => p !== null);
      if (freed.length > 0) {
        await tx
          .updateTable('payment_leases')
          .set({ event_row_id: null, lease_token: null, lease_expires_at: null })
          .where(wherePayments(freed))
          .where('lease_token', '=', token)
          .execute();
      }
    }
    // Only a takeover writes here, never an ordinary claim: the attempt whose lease expired.
    const abandoned = events.filter((row) => row.status === 'processing');
    if (abandoned.length > 0) await tx.insertInto('event_attempts').values(abandoned.map(expiredAttempt)).execute();
    return events;
  });

  return new Map(
    claimed.map((row): [number, ClaimedEvent] => {
      const attempts = row.attempts + 1;
      const lease: Lease = { id: row.id, owner, token, expiresAt, claimedAt: now, attempts, payment: paymentOf(row) };
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

/** The attempt a takeover ends, as read before the claim: its holder's lease ran out. */
function expiredAttempt(row: EventRow): Insertable<EventAttemptsTable> {
  return {
    event_row_id: row.id,
    attempt: row.attempts,
    owner: row.lease_owner,
    outcome: 'lease_expired',
    error: null,
    started_at: row.claimed_at,
    ended_at: row.lease_expires_at ?? row.next_attempt_at!,
  };
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
