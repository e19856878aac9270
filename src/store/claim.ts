import { type Insertable, type Kysely, type Selectable } from 'kysely';
import { EVENT_COLUMNS } from '../db/event-rows.js';
import { newLease } from '../db/lease.js';
import { caseById } from '../db/sql-case.js';
import { fromDbTime, toDbTime, type DbTime, type EventAttemptsTable, type InboxDatabase, type WebhookEventsTable } from '../db/schema.js';
import type { ProviderName } from '../model/delivery.js';
import type { ClaimedEvent, Lease, PaymentRef } from './inbox-store.js';
import { ensurePaymentRows } from './payment-locks.js';

/**
 * Claiming events: a batch of claims is one statement, whatever its size, and takes each event's
 * lease. The payment is not held by the claim: the transaction that applies the event locks it (see
 * payment-locks.ts).
 */

/** An event as the claim reads it: its body's columns are null when its body row is missing. */
type EventRow = Selectable<WebhookEventsTable> & { payload: string | null; headers: string | null };

/** The claim's own condition, read first so that offers of an event that is not due cost no write. */
function isDue(event: Pick<EventRow, 'status' | 'next_attempt_at'>, now: DbTime): boolean {
  if (event.status === 'received') return true;
  return event.status !== 'processed' && event.next_attempt_at !== null && event.next_attempt_at <= now;
}

function paymentOf(row: Pick<EventRow, 'provider' | 'payment_id'>): PaymentRef | null {
  return row.payment_id === null ? null : { provider: row.provider, paymentId: row.payment_id };
}

/**
 * Claims the due events among `ids` for one owner. Returns the claims by id; an event is missing when
 * it was not due or was taken by someone else.
 *
 * The events are read first; each lease is then taken only if the row still has the attempt count
 * that was read, so the read stays true for every event claimed: a concurrent claim in between makes
 * this one miss, never double.
 */
export async function claimBatch(db: Kysely<InboxDatabase>, ids: number[], owner: string, leaseMs: number, now: Date): Promise<Map<number, ClaimedEvent>> {
  const nowDb = toDbTime(now);
  // A left join: an event whose body is missing is claimed and fails with that reason (readStored),
  // where an inner join would leave it due, offered to every worker and never taken.
  const rows = await db
    .selectFrom('webhook_events')
    .leftJoin('webhook_event_bodies', 'webhook_event_bodies.event_row_id', 'webhook_events.id')
    .select([...EVENT_COLUMNS, 'webhook_event_bodies.payload', 'webhook_event_bodies.headers'])
    .where('id', 'in', ids)
    .execute();
  const due = rows.filter((row) => isDue(row, nowDb));
  if (due.length === 0) return new Map();
  await ensurePaymentRows(
    db,
    due.map(paymentOf).filter((p): p is PaymentRef => p !== null),
  );

  const { token, expiresAt, columns } = newLease(owner, leaseMs, now);
  const dueIds = due.map((row) => row.id);
  const claim = async (runner: Kysely<InboxDatabase>): Promise<EventRow[]> => {
    const updated = await runner
      .updateTable('webhook_events')
      .set((eb) => ({ status: 'processing', attempts: eb('attempts', '+', 1), claimed_at: nowDb, ...columns }))
      // Each row under its own attempt count, as heldBy fences by token (see there why not OR'ed
      // pairs). The cast: PostgreSQL types a CASE of bound values as text.
      .where('id', 'in', dueIds)
      .where((eb) => eb('attempts', '=', eb.cast<number>(caseById(due.map((row) => [row.id, row.attempts])), 'integer')))
      .where((eb) => eb.or([eb('status', '=', 'received'), eb.and([eb('status', 'in', ['failed', 'processing']), eb('next_attempt_at', '<=', nowDb)])]))
      .executeTakeFirst();
    let events = due;
    if (Number(updated.numUpdatedRows) !== due.length) {
      const rows = await runner.selectFrom('webhook_events').select(['id', 'lease_token']).where('id', 'in', dueIds).execute();
      const leased = new Set(rows.filter((r) => r.lease_token === token).map((r) => r.id));
      events = due.filter((row) => leased.has(row.id));
    }
    // Only a takeover writes here, never an ordinary claim: the attempt whose lease expired.
    const abandoned = events.filter((row) => row.status === 'processing');
    if (abandoned.length > 0) await runner.insertInto('event_attempts').values(abandoned.map(expiredAttempt)).execute();
    return events;
  };
  // A takeover records the attempt it ends with the claim, atomically; an ordinary claim is one statement.
  const claimed = due.some((row) => row.status === 'processing') ? await db.transaction().execute(claim) : await claim(db);

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
    const text = row[what];
    if (text === null) return { problem: `its ${what} is missing (no body row)` };
    try {
      return { value: JSON.parse(text) as unknown };
    } catch (error) {
      return { problem: `its ${what} (${Buffer.byteLength(text)} bytes stored) is not valid JSON: ${(error as Error).message}` };
    }
  };
  const payload = parse('payload');
  const headers = parse('headers');
  const problems = [payload.problem, headers.problem].filter((problem) => problem !== undefined);
  if (problems.length > 0) return { payload: null, headers: {}, unreadable: `the stored event cannot be read: ${problems.join('; ')}` };
  return { payload: payload.value, headers: headers.value as Record<string, string> };
}
