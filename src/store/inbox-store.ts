import { Migrator, sql, type ExpressionOrFactory, type Kysely, type Selectable, type SqlBool } from 'kysely';
import type { Clock } from '../clock.js';
import { LeaseLostError, StoreUnavailableError } from '../errors.js';
import type { ProviderName, VerifiedEvent } from '../providers/provider.js';
import type { StoreBackend } from './backend.js';
import { newLease } from './lease.js';
import { inboxMigrations } from './migrations.js';
import { ensurePaymentLeaseRow, releasePaymentLease, takePaymentLease, type PaymentRef } from './payment-leases.js';
import { fromDbTime, toDbTime, type DbTime, type EventStatus, type InboxDatabase, type WebhookEventsTable } from './schema.js';
import type { BusinessTransaction, ClaimedEvent, EventState, InboxStore, Lease, PipelineStats, RecordResult } from './store.js';

const TRANSIENT_CONFLICT_RETRIES = 3;

/** The store logic, written once over Kysely; the backend supplies what differs per database. */
export class KyselyInboxStore implements InboxStore {
  readonly backend: string;

  constructor(
    readonly db: Kysely<InboxDatabase>,
    private readonly dialect: StoreBackend,
    private readonly clock: Clock,
    private readonly url: string,
  ) {
    this.backend = dialect.name;
  }

  async migrate(): Promise<string[]> {
    return this.guard(() => this.applyMigrations());
  }

  private async applyMigrations(): Promise<string[]> {
    await this.dialect.ensureDatabase(this.url);
    const { error, results } = await this.migrator().migrateToLatest();
    if (error) throw error;
    return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
  }

  async pendingMigrations(): Promise<string[]> {
    return this.guard(async () => (await this.migrator().getMigrations()).filter((m) => m.executedAt === undefined).map((m) => m.name));
  }

  private migrator(): Migrator {
    return new Migrator({
      db: this.db,
      provider: { getMigrations: async () => inboxMigrations(this.dialect.columnTypes) },
      migrationTableName: 'schema_migrations',
      migrationLockTableName: 'schema_migrations_lock',
      // Numbers are reserved per feature and land in any order (0004 and 0005 before 0003): a database
      // that already ran a later one must still take an earlier one that arrives afterwards.
      allowUnorderedMigrations: true,
    });
  }

  async ping(): Promise<void> {
    await this.guard(() => sql`select 1`.execute(this.db));
  }

  async record(event: VerifiedEvent, paymentId: string | null = null): Promise<RecordResult> {
    return this.guard(async () => {
      const now = toDbTime(this.clock.now());
      const row = {
        provider: event.provider,
        event_id: event.eventId,
        event_type: event.eventType,
        payload: event.payload,
        headers: JSON.stringify(event.headers),
        status: 'received',
        attempts: 0,
        next_attempt_at: now,
        created_at: now,
        payment_id: paymentId,
      } as const;
      // One statement: inserted only when neither the event nor its archived key exists. The archive
      // commits the key before it deletes the row, so a redelivery racing it finds one or the other.
      const inserted = await this.db
        .insertInto('webhook_events')
        .orIgnore()
        .columns(Object.keys(row) as Array<keyof typeof row>)
        .expression(
          this.db
            .selectNoFrom(Object.entries(row).map(([column, value]) => sql.val(value).as(column)))
            .where(({ not, exists, selectFrom }) =>
              not(exists(selectFrom('archived_event_keys').select('id').where('provider', '=', event.provider).where('event_id', '=', event.eventId))),
            ),
        )
        .executeTakeFirst();
      if (inserted.numInsertedOrUpdatedRows === 1n && inserted.insertId !== undefined) {
        return { outcome: 'recorded', id: Number(inserted.insertId), status: 'received' };
      }
      const existing = await this.db
        .selectFrom('webhook_events')
        .select(['id', 'status'])
        .where('provider', '=', event.provider)
        .where('event_id', '=', event.eventId)
        .executeTakeFirst();
      if (existing) return { outcome: 'duplicate', id: existing.id, status: existing.status };
      const archived = await this.db
        .selectFrom('archived_event_keys')
        .select('event_row_id')
        .where('provider', '=', event.provider)
        .where('event_id', '=', event.eventId)
        .executeTakeFirstOrThrow();
      return { outcome: 'duplicate', id: Number(archived.event_row_id), status: 'processed' };
    });
  }

  async claim(id: number, owner: string, leaseMs: number): Promise<ClaimedEvent | null> {
    return this.guard(async () => {
      const target = await this.db.selectFrom('webhook_events').select(['provider', 'payment_id', 'status', 'next_attempt_at']).where('id', '=', id).executeTakeFirst();
      const now = this.clock.now();
      // Most offers of an event that is not due (processed, or held by a live lease) stop at this read.
      if (!target || !isDue(target, toDbTime(now))) return null;
      const payment = target.payment_id === null ? null : { provider: target.provider, paymentId: target.payment_id };
      if (payment) await ensurePaymentLeaseRow(this.db, payment);

      const { token, expiresAt, columns } = newLease(owner, leaseMs, now);
      const dueAt = toDbTime(now);
      // One transaction, payment lease first (the lock order every writer keeps): both leases or neither.
      const claimed = await this.withConflictRetries(() =>
        commitUnlessNull(this.db, async (tx) => {
          if (payment && !(await takePaymentLease(tx, payment, { eventRowId: id, token, expiresAt: columns.lease_expires_at }, dueAt))) return null;
          const takeLease = async (due: ExpressionOrFactory<InboxDatabase, 'webhook_events', SqlBool>) => {
            const updated = await tx
              .updateTable('webhook_events')
              .set((eb) => ({ status: 'processing', attempts: eb('attempts', '+', 1), ...columns }))
              .where('id', '=', id)
              .where(due)
              .executeTakeFirst();
            return updated.numUpdatedRows === 1n;
          };
          // Two conditional statements rather than one, so a takeover is known as one (for metrics and
          // logs); the common case, a new or retried event, still takes a single statement.
          let takeover = false;
          if (!(await takeLease((eb) => eb.or([eb('status', '=', 'received'), eb.and([eb('status', '=', 'failed'), eb('next_attempt_at', '<=', dueAt)])])))) {
            takeover = await takeLease((eb) => eb.and([eb('status', '=', 'processing'), eb('next_attempt_at', '<=', dueAt)]));
            if (!takeover) return null;
          }
          return { takeover, row: await tx.selectFrom('webhook_events').selectAll().where('id', '=', id).executeTakeFirstOrThrow() };
        }),
      );
      if (!claimed) return null;
      const { row, takeover } = claimed;
      const lease: Lease = { id, owner, token, expiresAt, attempts: row.attempts, payment };
      return {
        lease,
        takeover,
        event: {
          id: row.id,
          provider: row.provider as ProviderName,
          eventId: row.event_id,
          eventType: row.event_type,
          payload: JSON.parse(row.payload) as unknown,
          headers: JSON.parse(row.headers) as Record<string, string>,
          attempts: row.attempts,
          createdAt: fromDbTime(row.created_at),
        },
      };
    });
  }

  async completeFenced(lease: Lease, work: (tx: BusinessTransaction) => Promise<string>): Promise<string> {
    return this.withConflictRetries(() =>
      this.db.transaction().execute(async (tx) => {
        const outcome = await work(tx);
        const now = toDbTime(this.clock.now());
        if (lease.payment && !(await releasePaymentLease(tx, lease.payment, lease.token))) throw new LeaseLostError(lease.id);
        const fenced = await tx
          .updateTable('webhook_events')
          .set({ status: 'processed', outcome, processed_at: now, lease_token: null, lease_expires_at: null, next_attempt_at: null, last_error: null })
          .where('id', '=', lease.id)
          .where('lease_token', '=', lease.token)
          .where('status', '=', 'processing')
          .where('lease_expires_at', '>', now)
          .executeTakeFirst();
        if (fenced.numUpdatedRows !== 1n) throw new LeaseLostError(lease.id);
        return outcome;
      }),
    );
  }

  async fail(lease: Lease, error: string, retryAt: Date | null): Promise<boolean> {
    return this.withConflictRetries(() =>
      this.db.transaction().execute(async (tx) => {
        if (lease.payment) await releasePaymentLease(tx, lease.payment, lease.token);
        const result = await tx
          .updateTable('webhook_events')
          .set({ status: 'failed', last_error: error, next_attempt_at: retryAt ? toDbTime(retryAt) : null, lease_token: null, lease_expires_at: null })
          .where('id', '=', lease.id)
          .where('lease_token', '=', lease.token)
          .where('status', '=', 'processing')
          .executeTakeFirst();
        return result.numUpdatedRows === 1n;
      }),
    );
  }

  async dueEventIds(limit: number, overdueMs = 0): Promise<number[]> {
    return this.guard(async () => {
      const rows = await this.db
        .selectFrom('webhook_events')
        .select('id')
        .where('next_attempt_at', '<=', toDbTime(new Date(this.clock.now().getTime() - overdueMs)))
        .orderBy('next_attempt_at')
        .limit(limit)
        .execute();
      return rows.map((r) => r.id);
    });
  }

  async nextDueEventOfPayment(payment: PaymentRef): Promise<number | null> {
    return this.guard(async () => {
      const row = await this.db
        .selectFrom('webhook_events')
        .select('id')
        .where('provider', '=', payment.provider)
        .where('payment_id', '=', payment.paymentId)
        .where('next_attempt_at', '<=', toDbTime(this.clock.now()))
        .orderBy('next_attempt_at')
        .limit(1)
        .executeTakeFirst();
      return row?.id ?? null;
    });
  }

  async eventState(id: number): Promise<EventState | null> {
    return this.guard(async () => {
      const row = await this.db.selectFrom('webhook_events').selectAll().where('id', '=', id).executeTakeFirst();
      return row ? toEventState(row) : null;
    });
  }

  async findEvent(provider: string, eventId: string): Promise<EventState | null> {
    return this.guard(async () => {
      const row = await this.db.selectFrom('webhook_events').selectAll().where('provider', '=', provider).where('event_id', '=', eventId).executeTakeFirst();
      return row ? toEventState(row) : null;
    });
  }

  async pipelineStats(): Promise<PipelineStats> {
    return this.guard(async () => {
      const now = toDbTime(this.clock.now());
      // Pending events are exactly those with a next attempt time: the index bounds the scan to them.
      const pending = this.db
        .selectFrom('webhook_events')
        .select((eb) => [
          eb.fn.sum<number | string | null>(eb.case().when('next_attempt_at', '<=', now).then(1).else(0).end()).as('due'),
          eb.fn.sum<number | string | null>(eb.case().when(eb.and([eb('status', '=', 'processing'), eb('lease_expires_at', '<=', now)])).then(1).else(0).end()).as('stuck'),
          eb.fn.min('created_at').as('oldest'),
        ])
        .where('next_attempt_at', 'is not', null)
        .executeTakeFirstOrThrow();
      const failed = this.db
        .selectFrom('webhook_events')
        .select((eb) => eb.fn.countAll<number | string>().as('n'))
        .where('status', '=', 'failed')
        .where('next_attempt_at', 'is', null)
        .executeTakeFirstOrThrow();
      const [counts, givenUp] = await Promise.all([pending, failed]);
      return {
        due: Number(counts.due ?? 0),
        stuck: Number(counts.stuck ?? 0),
        oldestPendingAt: counts.oldest ? fromDbTime(counts.oldest) : null,
        failed: Number(givenUp.n),
      };
    });
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }

  /** Deadlocks and lock timeouts roll the whole transaction back; running it again is safe. */
  private async withConflictRetries<T>(operation: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await operation();
      } catch (error) {
        if (attempt < TRANSIENT_CONFLICT_RETRIES && this.dialect.isTransientConflict(error)) continue;
        throw this.translate(error);
      }
    }
  }

  private async guard<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      throw this.translate(error);
    }
  }

  private translate(error: unknown): unknown {
    if (this.dialect.isUnavailable(error)) {
      return new StoreUnavailableError(`database unavailable: ${(error as Error).message}`, { cause: error });
    }
    return error;
  }
}

/** The claim's own condition, read first so that offers of an event that is not due cost one SELECT. */
function isDue(event: { status: EventStatus; next_attempt_at: DbTime | null }, now: DbTime): boolean {
  if (event.status === 'received') return true;
  return event.status !== 'processed' && event.next_attempt_at !== null && event.next_attempt_at <= now;
}

const ROLLBACK = Symbol('rollback');

/** Runs `work` in a transaction that commits unless `work` returns null. */
async function commitUnlessNull<T>(db: Kysely<InboxDatabase>, work: (tx: BusinessTransaction) => Promise<T | null>): Promise<T | null> {
  try {
    return await db.transaction().execute(async (tx) => {
      const result = await work(tx);
      if (result === null) throw ROLLBACK;
      return result;
    });
  } catch (error) {
    if (error === ROLLBACK) return null;
    throw error;
  }
}

export function toEventState(row: Selectable<WebhookEventsTable>): EventState {
  return {
    id: row.id,
    provider: row.provider,
    eventId: row.event_id,
    eventType: row.event_type,
    status: row.status,
    attempts: row.attempts,
    leaseOwner: row.lease_owner,
    nextAttemptAt: row.next_attempt_at ? fromDbTime(row.next_attempt_at) : null,
    lastError: row.last_error,
    outcome: row.outcome,
    createdAt: fromDbTime(row.created_at),
    processedAt: row.processed_at ? fromDbTime(row.processed_at) : null,
  };
}
