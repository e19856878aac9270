import type { Kysely } from 'kysely';
import { BatchAbandoned } from '../db/batcher.js';
import { caseById } from '../db/sql-case.js';
import { heldBy } from '../db/lease.js';
import { toDbTime, type DbTime, type InboxDatabase } from '../db/schema.js';
import { LeaseLostError } from '../errors.js';
import { outcomeText, type EventOutcome } from '../model/outcome.js';
import type { BusinessTransaction, CompletionBatch, CompletionWork, Lease, PaymentRef } from './inbox-store.js';
import { lockPayments, paymentKey } from './payment-locks.js';

/**
 * Completing events: each event's business work and its "processed" mark in one transaction, fenced
 * by its lease. A batch of completions shares that transaction and its commit, whatever its size:
 * processing an event is otherwise a dozen round trips of its own, and on a database that answers in
 * a fraction of a millisecond those round trips, not the work, are what a worker spends its time on.
 */

export interface CompletionRequest {
  lease: Lease;
  work: CompletionWork;
}

/**
 * Runs every request's work and marks its event processed, all in one transaction: the payments
 * locked first and the events fenced by one statement. The requests come in rounds, each about
 * different payments (one event per payment, see CompletionBatch and paymentRounds); the rounds run
 * one after the other, each round's deferred writes written before the next round starts, so that
 * an event sees what an earlier event of its payment wrote, as it would after that one's commit. The
 * whole batch stands or falls together: if one work fails or one lease was lost, it rolls back and
 * returns null, and the caller runs each request alone so that a failure stays with its own event.
 * Returns the outcomes round by round, in the order of `rounds.flat()`. `lockingReads`: see
 * lockPayments.
 */
export async function completeBatch(db: Kysely<InboxDatabase>, rounds: CompletionRequest[][], lockingReads: boolean, now: () => Date): Promise<EventOutcome[] | null> {
  const leases = rounds.flat().map((request) => request.lease);
  try {
    return await db.transaction().execute(async (tx) => {
      await lockPayments(tx, paymentsOf(leases), lockingReads);
      const outcomes: EventOutcome[] = [];
      try {
        for (const round of rounds) {
          const batch = new TransactionBatch(paymentsOf(round.map((request) => request.lease)));
          for (const { work } of round) outcomes.push(await work(tx, batch));
          await batch.writeDeferred(tx);
        }
      } catch {
        throw new BatchAbandoned();
      }
      await fence(tx, leases, outcomes, toDbTime(now()));
      return outcomes;
    });
  } catch (error) {
    if (error instanceof BatchAbandoned || error instanceof LeaseLostError) return null;
    throw error;
  }
}

/**
 * `items` in rounds that hold at most one item of each payment, in order: an item goes to the first
 * round after the one that holds its payment's previous item, so a payment's items keep their order
 * from round to round. Items about no payment all go to the first round.
 */
export function paymentRounds<T>(items: T[], paymentOf: (item: T) => PaymentRef | null): T[][] {
  const rounds: T[][] = [];
  const nextRound = new Map<string, number>();
  for (const item of items) {
    const payment = paymentOf(item);
    const key = payment === null ? null : paymentKey(payment.provider, payment.paymentId);
    const index = key === null ? 0 : (nextRound.get(key) ?? 0);
    if (key !== null) nextRound.set(key, index + 1);
    (rounds[index] ??= []).push(item);
  }
  return rounds;
}

function paymentsOf(leases: Lease[]): PaymentRef[] {
  return leases.map((lease) => lease.payment).filter((payment): payment is PaymentRef => payment !== null);
}

/** A completion transaction's CompletionBatch; made inside the transaction, so one run again starts afresh. */
export class TransactionBatch implements CompletionBatch {
  private readonly deferred: Array<(tx: BusinessTransaction) => Promise<void>> = [];

  constructor(readonly payments: PaymentRef[]) {}

  /** The batch of `leases`, its payments locked by `tx` before any work runs (see lockPayments). */
  static async locked(tx: BusinessTransaction, leases: Lease[], lockingReads: boolean): Promise<TransactionBatch> {
    const batch = new TransactionBatch(paymentsOf(leases));
    await lockPayments(tx, batch.payments, lockingReads);
    return batch;
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
export function perBatch<T, Tx = BusinessTransaction>(create: (batch: CompletionBatch, tx: Tx) => T, write: (tx: BusinessTransaction, state: T) => Promise<void>) {
  const states = new WeakMap<CompletionBatch, T>();
  return (batch: CompletionBatch, tx: Tx): T => {
    if (states.has(batch)) return states.get(batch)!;
    const state = create(batch, tx);
    states.set(batch, state);
    batch.atCommit((commitTx) => write(commitTx, state));
    return state;
  };
}

/**
 * Marks the leases' events processed with their outcomes (in words and structured, in the same
 * statement), each only while the lease's own token still holds it and has not expired; any miss
 * throws LeaseLostError, which rolls the transaction back.
 */
export async function fence(tx: BusinessTransaction, leases: Lease[], outcomes: EventOutcome[], now: DbTime): Promise<void> {
  const fenced = await tx
    .updateTable('webhook_events')
    .set({
      status: 'processed',
      outcome: caseById(leases.map((lease, i) => [lease.id, outcomeText(outcomes[i]!)])),
      outcome_detail: caseById(leases.map((lease, i) => [lease.id, JSON.stringify(outcomes[i]!)])),
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

/** One event's completion in a transaction of its own, so a failure or a lost lease stays with it. */
export async function completeOne(db: Kysely<InboxDatabase>, { lease, work }: CompletionRequest, lockingReads: boolean, now: () => Date): Promise<EventOutcome> {
  return db.transaction().execute(async (tx) => {
    const batch = await TransactionBatch.locked(tx, [lease], lockingReads);
    const outcome = await work(tx, batch);
    await batch.writeDeferred(tx);
    await fence(tx, [lease], [outcome], toDbTime(now()));
    return outcome;
  });
}

/** An attempt's error as event_attempts keeps it: errors can quote payload text, so their size is bounded. */
export const EVENT_ATTEMPT_ERROR_MAX = 2000;

/** `text` cut to `max` characters, saying so. */
export function capped(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

/**
 * A failed attempt: the event is `failed` with its error and next attempt (none when `retryAt` is
 * null), and the attempt is kept in event_attempts; only while the lease still holds it. True when it
 * did. `now`: the failure's time.
 */
export async function failAttempt(db: Kysely<InboxDatabase>, lease: Lease, error: string, retryAt: Date | null, now: Date): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const result = await tx
      .updateTable('webhook_events')
      .set({ status: 'failed', last_error: error, next_attempt_at: retryAt ? toDbTime(retryAt) : null, lease_token: null, lease_expires_at: null })
      .where('id', '=', lease.id)
      .where('lease_token', '=', lease.token)
      .where('status', '=', 'processing')
      .executeTakeFirst();
    if (result.numUpdatedRows !== 1n) return false;
    await tx
      .insertInto('event_attempts')
      .values({
        event_row_id: lease.id,
        attempt: lease.attempts,
        owner: lease.owner,
        outcome: retryAt ? 'failed' : 'gave_up',
        error: capped(error, EVENT_ATTEMPT_ERROR_MAX),
        started_at: toDbTime(lease.claimedAt),
        ended_at: toDbTime(now),
      })
      .execute();
    return true;
  });
}
