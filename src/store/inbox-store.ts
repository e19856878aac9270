import { Migrator, sql, type Kysely, type QueryResult, type Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import { describeError, LeaseLostError, RecordNotStoredError, StoreUnavailableError } from '../errors.js';
import type { ProviderName, VerifiedEvent } from '../providers/provider.js';
import type { StoreBackend } from './backend.js';
import { Batcher } from './batcher.js';
import { compiledStatement } from './compiled-statement.js';
import {
  discardIncomplete,
  eventKey,
  incompleteError,
  storedPayloadBytes,
  NEW_EVENT_COLUMNS,
  newEventRow,
  newEventsInsert,
  newEventSource,
  recordBatch,
  recordBatchShape,
  type NewEventRow,
  type NewEventsInsert,
  type RecordRequest,
} from './group-commit.js';
import { inboxMigrations } from './migrations.js';
import { releasePaymentLeases, type PaymentRef } from './payment-leases.js';
import { claimsByOwner, type ClaimRequest } from './lease.js';
import { claimBatch, completeBatch, fence, nextDueEvents, paymentKey, TransactionBatch, type CompletionRequest } from './processing-batches.js';
import { fromDbTime, toDbTime, type EventStatus, type InboxDatabase, type WebhookEventsTable } from './schema.js';
import type { BusinessTransaction, ClaimedEvent, CompletionWork, EventState, InboxStore, Lease, PipelineStats, RecordResult } from './store.js';

const TRANSIENT_CONFLICT_RETRIES = 3;
/** Inserts of one event whose row the database dropped (RecordNotStoredError): each takes a new id. */
const RECORD_ATTEMPTS = 5;
/**
 * Events per group commit, the largest recordBatchShape; bounded so one statement stays far below
 * parameter and packet limits.
 */
export const MAX_RECORD_BATCH = 128;
const MAX_RECORD_BATCH_BYTES = 4 * 1024 * 1024;
/** Without RETURNING a batch is a transaction of five round trips, worth it from a handful of events on. */
const MIN_TRANSACTION_BATCH = 4;
/**
 * Claims or completions per transaction: enough to share a commit widely, few enough that one slow event
 * delays few others. With two batches in flight per stage, an event spends a claim and a completion
 * (each a transaction with its commit) in the pipeline, so what a process finishes per second is about
 * the events it holds over that time (Little's law): 64 here and 256 workers kept up with 1,000/s
 * where 32 and 128 fell behind once commits slowed (keep-up 0.86-0.97 against 0.58-0.96 in five pairs).
 */
const MAX_PROCESSING_BATCH = 64;
/**
 * Claim (or completion) batches at once. Two, as on the ack path by default: at moderate load a free slot starts a
 * batch of one, so fewer slots make batches fill (18% fewer statements per event at 800/s,
 * same throughput), while a batch held up by a slow handler still leaves one slot to the others.
 */
const PROCESSING_BATCHES_IN_FLIGHT = 2;

interface EventKey extends Record<string, unknown> {
  provider: string;
  event_id: string;
}

/** The store logic, written once over Kysely; the backend supplies what differs per database. */
export class KyselyInboxStore implements InboxStore {
  readonly backend: string;
  /**
   * Group commit (see Batcher): concurrent deliveries are recorded by one multi-row insert, so a
   * commit (and its log flush) is shared by every event of the batch.
   */
  private readonly records: Batcher<RecordRequest, RecordResult>;
  /** The workers' side, batched the same way (see processing-batches.ts). */
  private readonly claims: Batcher<ClaimRequest, ClaimedEvent | null>;
  private readonly completions: Batcher<CompletionRequest, string>;
  private readonly handOffs: Batcher<PaymentRef, number | null>;
  /** Whether the database has INSERT ... RETURNING, which makes a record batch one statement. */
  private insertReturns: Promise<boolean> | undefined;
  /** The statements every delivery may run, compiled once (see compiledStatement). */
  private readonly insertNewEvent: (row: NewEventRow) => Promise<QueryResult<unknown>>;
  private readonly insertNewEvents: NewEventsInsert;
  private readonly selectEventByKey: (key: EventKey) => Promise<QueryResult<{ id: number; status: EventStatus }>>;
  private readonly selectArchivedByKey: (key: EventKey) => Promise<QueryResult<{ event_row_id: number }>>;
  private readonly selectPayloadBytes: (row: { id: number }) => Promise<QueryResult<{ payload_bytes: number | string }>>;

  /**
   * @param ackDb connections of the acknowledgement path alone (`record`), so a delivery's insert
   *   never queues behind processing statements for a pooled connection.
   * @param recordBatches record batches running at once, one per connection of `ackDb`.
   */
  constructor(
    readonly db: Kysely<InboxDatabase>,
    private readonly ackDb: Kysely<InboxDatabase>,
    recordBatches: number,
    private readonly dialect: StoreBackend,
    private readonly clock: Clock,
    private readonly url: string,
  ) {
    this.backend = dialect.name;
    this.records = new Batcher((requests) => this.recordMany(requests), {
      maxBatch: MAX_RECORD_BATCH,
      maxInFlight: recordBatches,
      weight: (request) => request.event.payload.length,
      maxWeight: MAX_RECORD_BATCH_BYTES,
      shape: recordBatchShape,
      // A provider's concurrent copies of one event wait for the first one's record: run beside it,
      // each would insert the same key and wait for the other's row lock, its whole batch with it.
      coalesce: { keyOf: (request) => eventKey(request.event.provider, request.event.eventId), copy: (first) => ({ ...first, outcome: 'duplicate' }) },
    });
    const processing = { maxBatch: MAX_PROCESSING_BATCH, maxInFlight: Math.min(PROCESSING_BATCHES_IN_FLIGHT, dialect.maxConcurrentBatches) };
    this.claims = new Batcher(
      claimsByOwner((ids, owner, leaseMs) => this.withConflictRetries(() => claimBatch(this.db, ids, owner, leaseMs, this.clock.now()))),
      processing,
    );
    this.completions = new Batcher((requests) => this.completeMany(requests), processing);
    this.handOffs = new Batcher((payments) => this.nextDueOfPayments(payments), processing);

    this.insertNewEvent = compiledStatement<NewEventRow, unknown, InboxDatabase>(ackDb, (db, value) =>
      db.insertInto('webhook_events').orIgnore().columns(NEW_EVENT_COLUMNS).expression(newEventSource(db, value)),
    );
    this.insertNewEvents = newEventsInsert(ackDb);
    this.selectEventByKey = compiledStatement<EventKey, { id: number; status: EventStatus }, InboxDatabase>(ackDb, (db, value) =>
      db.selectFrom('webhook_events').select(['id', 'status']).where('provider', '=', value('provider')).where('event_id', '=', value('event_id')),
    );
    this.selectArchivedByKey = compiledStatement<EventKey, { event_row_id: number }, InboxDatabase>(ackDb, (db, value) =>
      db.selectFrom('archived_event_keys').select('event_row_id').where('provider', '=', value('provider')).where('event_id', '=', value('event_id')),
    );
    this.selectPayloadBytes = compiledStatement<{ id: number }, { payload_bytes: number | string }, InboxDatabase>(ackDb, (db, value) =>
      db.selectFrom('webhook_events').select(storedPayloadBytes).where('id', '=', value('id')),
    );
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

  /** Resolves once the batch that carries the event has committed. */
  record(event: VerifiedEvent, paymentId: string | null = null): Promise<RecordResult> {
    return this.records.submit({ event, paymentId, receivedAt: toDbTime(this.clock.now()) });
  }

  private async recordMany(requests: RecordRequest[]): Promise<Array<PromiseSettledResult<RecordResult>>> {
    const alone = () => Promise.allSettled(requests.map((request) => this.recordOne(request)));
    if (requests.length === 1) return alone();
    try {
      const returning = await this.insertReturning();
      if (!returning && requests.length < MIN_TRANSACTION_BATCH) return await alone();
      const results = await this.withConflictRetries(() => recordBatch(this.ackDb, requests, returning ? this.insertNewEvents : null));
      return await Promise.allSettled(results.map((result, i) => (result instanceof RecordNotStoredError ? Promise.reject(result) : (result ?? this.recordOne(requests[i]!)))));
    } catch (error) {
      // Unreachable: every waiting delivery gets the 503. Otherwise a concurrent insert of one of the
      // events (ConcurrentInsertError), a payload stored incomplete (rolled back), or one row the
      // database refuses: each event alone, so only a bad one fails.
      if (this.dialect.isUnavailable(error)) throw this.translate(error);
      return alone();
    }
  }

  /** Asked of the server once; asked again after a failure (it may have been down). */
  private insertReturning(): Promise<boolean> {
    this.insertReturns ??= this.dialect.insertReturning(this.ackDb).catch((error: unknown) => {
      this.insertReturns = undefined;
      throw error;
    });
    return this.insertReturns;
  }

  /**
   * One event, one autocommit statement. A row that was neither inserted nor found, or whose payload
   * was stored incomplete and discarded, is inserted again (see RecordNotStoredError); a batch leaves
   * such an event to this.
   */
  private async recordOne(request: RecordRequest): Promise<RecordResult> {
    const { event } = request;
    for (let attempt = 1; ; attempt++) {
      const result = await this.guard(() => this.insertOne(request));
      if (result instanceof RecordNotStoredError) throw result;
      if (result) return result;
      if (attempt === RECORD_ATTEMPTS) {
        throw new RecordNotStoredError(`event ${event.provider}/${event.eventId} was neither inserted nor found after ${attempt} attempts`);
      }
    }
  }

  /**
   * Where the database has RETURNING, the batch statement for one row: it reads the stored payload's
   * size as it inserts. Otherwise (MySQL) an INSERT IGNORE whose affected-row count tells new from
   * duplicate, and a read of the new row's payload size.
   */
  private async insertOne(request: RecordRequest): Promise<RecordResult | RecordNotStoredError | null> {
    if (await this.insertReturning()) return (await recordBatch(this.ackDb, [request], this.insertNewEvents))[0]!;
    return this.insertOrFind(request);
  }

  /** The event's result, or null when the database neither inserted its row whole nor has one for its key. */
  private async insertOrFind(request: RecordRequest): Promise<RecordResult | RecordNotStoredError | null> {
    const inserted = await this.insertNewEvent(newEventRow(request));
    if (inserted.numAffectedRows === 1n && inserted.insertId !== undefined) {
      const id = Number(inserted.insertId);
      const storedBytes = Number((await this.selectPayloadBytes({ id })).rows[0]?.payload_bytes);
      if (storedBytes === Buffer.byteLength(request.event.payload)) return { outcome: 'recorded', id, status: 'received' };
      return (await discardIncomplete(this.ackDb, [id])) ? null : incompleteError(request.event, storedBytes);
    }
    const key = { provider: request.event.provider, event_id: request.event.eventId };
    const existing = (await this.selectEventByKey(key)).rows[0];
    if (existing) return { outcome: 'duplicate', id: existing.id, status: existing.status };
    const archived = (await this.selectArchivedByKey(key)).rows[0];
    return archived ? { outcome: 'duplicate', id: Number(archived.event_row_id), status: 'processed' } : null;
  }

  claim(id: number, owner: string, leaseMs: number): Promise<ClaimedEvent | null> {
    return this.claims.submit({ id, owner, leaseMs });
  }

  completeFenced(lease: Lease, work: CompletionWork): Promise<string> {
    return this.completions.submit({ lease, work });
  }

  private async completeMany(requests: CompletionRequest[]): Promise<Array<PromiseSettledResult<string>>> {
    if (requests.length > 1) {
      try {
        const outcomes = await this.withConflictRetries(() => completeBatch(this.db, requests, () => this.clock.now()));
        if (outcomes) return outcomes.map((value) => ({ status: 'fulfilled', value }));
      } catch (error) {
        if (this.dialect.isUnavailable(error)) throw this.translate(error);
      }
    }
    // Alone, or the batch could not commit as a whole: each event in its own transaction, so a
    // failure or a lost lease stays with its event.
    return Promise.allSettled(requests.map((request) => this.completeOne(request)));
  }

  private async completeOne({ lease, work }: CompletionRequest): Promise<string> {
    return this.withConflictRetries(() =>
      this.db.transaction().execute(async (tx) => {
        const batch = TransactionBatch.of([lease]);
        const outcome = await work(tx, batch);
        await batch.writeDeferred(tx);
        await fence(tx, [lease], [outcome], toDbTime(this.clock.now()));
        return outcome;
      }),
    );
  }

  async fail(lease: Lease, error: string, retryAt: Date | null): Promise<boolean> {
    return this.withConflictRetries(() =>
      this.db.transaction().execute(async (tx) => {
        await releasePaymentLeases(tx, [lease]);
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

  nextDueEventOfPayment(payment: PaymentRef): Promise<number | null> {
    return this.handOffs.submit(payment);
  }

  private async nextDueOfPayments(payments: PaymentRef[]): Promise<Array<PromiseSettledResult<number | null>>> {
    const next = await this.guard(() => nextDueEvents(this.db, payments, toDbTime(this.clock.now())));
    return payments.map((p) => ({ status: 'fulfilled', value: next.get(paymentKey(p.provider, p.paymentId)) ?? null }));
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
    await Promise.all([this.ackDb.destroy(), this.db.destroy()]);
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

  isUnavailable(error: unknown): boolean {
    return error instanceof StoreUnavailableError || this.dialect.isUnavailable(error);
  }

  private translate(error: unknown): unknown {
    if (this.dialect.isUnavailable(error)) {
      return new StoreUnavailableError(`database unavailable: ${describeError(error)}`, { cause: error });
    }
    return error;
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
