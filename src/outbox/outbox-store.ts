import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import { BatchAbandoned, Batcher } from '../db/batcher.js';
import { caseById } from '../db/sql-case.js';
import { storableKey } from './outbox-writer.js';
import { claimsByOwner, heldBy, newLease, type ClaimRequest } from '../db/lease.js';
import { fromDbTime, toDbTime, type DbTime, type InboxDatabase, type OutboxStatus, type OutboxTable } from '../db/schema.js';

/** A side effect as a transport sees it. */
export interface OutboxMessage {
  id: number;
  /** Sent downstream with every attempt (Idempotency-Key, Message-ID), so the receiver can deduplicate. */
  idempotencyKey: string;
  kind: string;
  payload: unknown;
}

/** Ownership of one outbox row for a bounded time; the token fences the write that finishes it. */
export interface OutboxLease {
  id: number;
  token: string;
  expiresAt: Date;
  /** Attempts including this one. */
  attempts: number;
}

/** One outbox row as operators see it. */
export interface OutboxEntry {
  id: number;
  idempotencyKey: string;
  kind: string;
  status: OutboxStatus;
  attempts: number;
  nextAttemptAt: Date | null;
  lastError: string | null;
  outcome: string | null;
  createdAt: Date;
  sentAt: Date | null;
}

/** Rows a dispatcher still has to work on; the rest are final until an operator retries them. */
const UNFINISHED: OutboxStatus[] = ['pending', 'sending'];
/** Final rows an operator may send again. A sent row is not: it reached the downstream already. */
export const RETRYABLE: OutboxStatus[] = ['failed', 'skipped'];

/** Which rows `list` returns: every condition given must hold. */
export interface OutboxFilter {
  status?: OutboxStatus;
  kind?: string;
  /** Rows under one of these idempotency keys, or (with `orderingKeys` too) in one of those orderings. */
  keys?: string[];
  /** Rows in one of these orderings (a payment's forwarded events). */
  orderingKeys?: string[];
  /** Rows whose idempotency key starts with one of these. */
  keyPrefixes?: string[];
  /** Written at or after. */
  since?: Date;
  /** Written before. */
  until?: Date;
  limit: number;
}

export interface ClaimedMessage {
  lease: OutboxLease;
  message: OutboxMessage;
}

/** A finish as the store batches them (see Batcher). */
interface FinishRequest {
  lease: OutboxLease;
  status: 'sent' | 'skipped';
  outcome: string;
}

/** What every finish writes besides the row's own status, outcome and send time: nothing left to do, no lease. */
const FINISHED = { last_error: null, next_attempt_at: null, lease_token: null, lease_expires_at: null } as const;

const sentAt = (status: FinishRequest['status'], now: DbTime) => (status === 'sent' ? now : null);

/** Claims or finishes per statement: the dispatcher's lanes claim and finish at about the same time. */
const MAX_BATCH = 100;

/**
 * The outbox rows' state machine, with the same discipline as events: one conditional UPDATE claims
 * a row under a lease, and only the lease holder's token can finish it.
 */
export class OutboxStore {
  /** Concurrent claims (the dispatcher's lanes) share one UPDATE and one read (see Batcher). */
  private readonly claims = new Batcher<ClaimRequest, ClaimedMessage | null>(
    claimsByOwner((ids, owner, leaseMs) => this.claimMany(ids, owner, leaseMs)),
    { maxBatch: MAX_BATCH, maxInFlight: 1 },
  );

  /** Concurrent finishes share one UPDATE and one commit (see finishMany). */
  private readonly finishes = new Batcher<FinishRequest, boolean>((requests) => this.finishMany(requests), { maxBatch: MAX_BATCH, maxInFlight: 1 });

  constructor(
    private readonly db: Kysely<InboxDatabase>,
    private readonly clock: Clock,
  ) {}

  /**
   * Rows due now, oldest first: pending ones whose time came and sending ones whose lease expired
   * (takeover). A row whose dependency is still unfinished waits for it, and so does a row while an
   * earlier row of its ordering key is unfinished: one of a key in flight at a time, in order.
   */
  async dueIds(limit: number): Promise<number[]> {
    const rows = await this.db
      .selectFrom('outbox as row')
      .leftJoin('outbox as dependency', 'dependency.idempotency_key', 'row.depends_on_key')
      .select('row.id')
      .where('row.status', 'in', UNFINISHED)
      .where('row.next_attempt_at', '<=', toDbTime(this.clock.now()))
      .where((eb) => eb.or([eb('dependency.id', 'is', null), eb('dependency.status', 'not in', UNFINISHED)]))
      .where((eb) =>
        eb.or([
          eb('row.ordering_key', 'is', null),
          eb.not(
            eb.exists(
              eb
                .selectFrom('outbox as earlier')
                .select('earlier.id')
                .whereRef('earlier.ordering_key', '=', 'row.ordering_key')
                .whereRef('earlier.id', '<', 'row.id')
                .where('earlier.status', 'in', UNFINISHED),
            ),
          ),
        ]),
      )
      .orderBy('row.next_attempt_at')
      .limit(limit)
      .execute();
    return rows.map((r) => r.id);
  }

  /** Takes the lease if the row is due; null when another dispatcher holds it or it is not due. */
  claim(id: number, owner: string, leaseMs: number): Promise<ClaimedMessage | null> {
    return this.claims.submit({ id, owner, leaseMs });
  }

  /** One conditional UPDATE leases every due row of `ids` under one token; a read returns those it got. */
  private async claimMany(ids: number[], owner: string, leaseMs: number): Promise<Map<number, ClaimedMessage>> {
    const now = this.clock.now();
    const { token, expiresAt, columns } = newLease(owner, leaseMs, now);
    const claimed = await this.db
      .updateTable('outbox')
      .set((eb) => ({ status: 'sending', attempts: eb('attempts', '+', 1), ...columns }))
      .where('id', 'in', ids)
      .where('status', 'in', UNFINISHED)
      .where('next_attempt_at', '<=', toDbTime(now))
      .executeTakeFirst();
    if (claimed.numUpdatedRows === 0n) return new Map();

    const rows = await this.db.selectFrom('outbox').selectAll().where('id', 'in', ids).where('lease_token', '=', token).execute();
    return new Map(
      rows.map((row) => [
        row.id,
        {
          lease: { id: row.id, token, expiresAt, attempts: row.attempts },
          message: { id: row.id, idempotencyKey: row.idempotency_key, kind: row.kind, payload: JSON.parse(row.payload) as unknown },
        },
      ]),
    );
  }

  /**
   * Marks the row sent (or skipped), fenced by the lease token only, not its expiry: the side effect
   * has happened, so a late but unchallenged holder should still record it rather than cause a
   * second delivery. A takeover changed the token, and then the new holder decides.
   */
  finish(lease: OutboxLease, status: 'sent' | 'skipped', outcome: string): Promise<boolean> {
    return this.finishes.submit({ lease, status, outcome });
  }

  /**
   * A batch of finishes is one UPDATE in one transaction, committed only when every lease still
   * held its row, so that each caller's true is its own. Otherwise (a takeover, or the statement
   * failed) it rolls back and each finish runs alone, and every caller learns its own result.
   */
  private async finishMany(requests: FinishRequest[]): Promise<Array<PromiseSettledResult<boolean>>> {
    const now = toDbTime(this.clock.now());
    if (requests.length > 1 && (await this.finishTogether(requests, now))) return requests.map(() => ({ status: 'fulfilled', value: true }));
    return Promise.allSettled(requests.map((request) => this.finishOne(request, now)));
  }

  /** True when the batch committed; false when it rolled back (a lease lost, a deadlock, ...). */
  private async finishTogether(requests: FinishRequest[], now: DbTime): Promise<boolean> {
    const valuesOf = <T>(value: (request: FinishRequest) => T) => caseById(requests.map((request) => [request.lease.id, value(request)]));
    try {
      await this.db.transaction().execute(async (tx) => {
        const result = await tx
          .updateTable('outbox')
          .set({
            status: valuesOf((request) => request.status),
            outcome: valuesOf((request) => request.outcome),
            sent_at: valuesOf((request) => sentAt(request.status, now)),
            ...FINISHED,
          })
          .where(heldBy(requests.map((request) => request.lease)))
          .where('status', '=', 'sending')
          .executeTakeFirst();
        if (Number(result.numUpdatedRows) !== requests.length) throw new BatchAbandoned();
      });
      return true;
    } catch {
      // Whatever rolled it back is settled row by row: each finish alone gets its own answer or error.
      return false;
    }
  }

  private async finishOne({ lease, status, outcome }: FinishRequest, now: DbTime): Promise<boolean> {
    const result = await this.db
      .updateTable('outbox')
      .set({ status, outcome, sent_at: sentAt(status, now), ...FINISHED })
      .where('id', '=', lease.id)
      .where('lease_token', '=', lease.token)
      .where('status', '=', 'sending')
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  /** Records a failed attempt: pending again at `retryAt`, or `failed` for an operator when null. */
  async fail(lease: OutboxLease, error: string, retryAt: Date | null): Promise<boolean> {
    const result = await this.db
      .updateTable('outbox')
      .set({
        status: retryAt ? 'pending' : 'failed',
        last_error: error,
        next_attempt_at: retryAt ? toDbTime(retryAt) : null,
        lease_token: null,
        lease_expires_at: null,
      })
      .where('id', '=', lease.id)
      .where('lease_token', '=', lease.token)
      .where('status', '=', 'sending')
      .executeTakeFirst();
    return result.numUpdatedRows === 1n;
  }

  /**
   * Gives back rows claimed but never attempted (a stopping dispatcher): due again at once, the claim
   * not counted as an attempt. Each row only while its lease is still the one given.
   */
  async release(leases: OutboxLease[]): Promise<void> {
    if (leases.length === 0) return;
    await this.db
      .updateTable('outbox')
      .set((eb) => ({ status: 'pending', attempts: eb('attempts', '-', 1), lease_token: null, lease_expires_at: null }))
      .where(heldBy(leases))
      .where('status', '=', 'sending')
      .execute();
  }

  /** Rows matching the filter, newest first. */
  async list(filter: OutboxFilter): Promise<OutboxEntry[]> {
    let query = this.db.selectFrom('outbox').selectAll().orderBy('id', 'desc').limit(filter.limit);
    if (filter.status) query = query.where('status', '=', filter.status);
    if (filter.kind) query = query.where('kind', '=', filter.kind);
    const { keys, orderingKeys, keyPrefixes } = filter;
    if (keys || orderingKeys) {
      query = query.where((eb) =>
        eb.or([
          ...(keys ? [eb('idempotency_key', 'in', keys)] : []),
          ...(orderingKeys
            ? [
                eb(
                  'ordering_key',
                  'in',
                  orderingKeys.map((key) => storableKey(key)),
                ),
              ]
            : []),
        ]),
      );
    }
    if (keyPrefixes) query = query.where((eb) => eb.or(keyPrefixes.map((prefix) => eb('idempotency_key', 'like', `${prefix}%`))));
    if (filter.since) query = query.where('created_at', '>=', toDbTime(filter.since));
    if (filter.until) query = query.where('created_at', '<', toDbTime(filter.until));
    return (await query.execute()).map(toEntry);
  }

  async find(id: number): Promise<OutboxEntry | null> {
    const row = await this.db.selectFrom('outbox').selectAll().where('id', '=', id).executeTakeFirst();
    return row ? toEntry(row) : null;
  }

  /**
   * Makes final rows due again with a fresh attempt budget: one row by id, or every row in a status.
   * The idempotency key stays, so a downstream that did receive an earlier attempt deduplicates.
   * Returns how many rows were reset.
   */
  async retry(selector: { id: number } | { status: OutboxStatus }): Promise<number> {
    let query = this.db
      .updateTable('outbox')
      .set({ status: 'pending', attempts: 0, next_attempt_at: toDbTime(this.clock.now()) })
      .where('status', 'in', RETRYABLE);
    query = 'id' in selector ? query.where('id', '=', selector.id) : query.where('status', '=', selector.status);
    const result = await query.executeTakeFirst();
    return Number(result.numUpdatedRows);
  }

  /** Rows per status, every status present (zero when none). */
  async countByStatus(): Promise<Record<OutboxStatus, number>> {
    const rows = await this.db
      .selectFrom('outbox')
      .select((eb) => ['status', eb.fn.countAll<number | string>().as('n')])
      .groupBy('status')
      .execute();
    const counts: Record<OutboxStatus, number> = { pending: 0, sending: 0, sent: 0, failed: 0, skipped: 0 };
    for (const row of rows) counts[row.status] = Number(row.n);
    return counts;
  }
}

function toEntry(row: Selectable<OutboxTable>): OutboxEntry {
  return {
    id: row.id,
    idempotencyKey: row.idempotency_key,
    kind: row.kind,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt: row.next_attempt_at ? fromDbTime(row.next_attempt_at) : null,
    lastError: row.last_error,
    outcome: row.outcome,
    createdAt: fromDbTime(row.created_at),
    sentAt: row.sent_at ? fromDbTime(row.sent_at) : null,
  };
}
