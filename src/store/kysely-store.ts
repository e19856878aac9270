import { sql, type Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import type { StoreBackend } from '../db/backend.js';
import { Batcher } from '../db/batcher.js';
import { claimsByOwner, type ClaimRequest } from '../db/lease.js';
import { migrateToLatest, pendingMigrations, type DomainMigrations } from '../db/migrate.js';
import type { InboxDatabase } from '../db/schema.js';
import type { VerifiedEvent } from '../model/delivery.js';
import type { EventOutcome } from '../model/outcome.js';
import { claimBatch } from './claim.js';
import { completeBatch, completeOne, failAttempt, paymentRounds, type CompletionRequest } from './complete.js';
import { DatabaseErrors } from './database-errors.js';
import { dueEventIds, eventById, eventByKey, pipelineStats } from './event-queries.js';
import type { ClaimedEvent, CompletionWork, EventState, InboxStore, Lease, PipelineStats, RecordResult } from './inbox-store.js';
import { EventRecorder } from './record.js';
import { makeDueForReplay, removeArchivedEvents, restoreEvent, type RestoredEvent, type SeenEvent } from './operator-writes.js';
import type { EventRow } from '../db/event-rows.js';

/**
 * Claims or completions per transaction: enough to share a commit widely, few enough that one slow event
 * delays few others. An event spends a claim and a completion (each a transaction with its commit) in
 * the pipeline, so what a process finishes per second is about the events it holds over that time
 * (Little's law): batches must be large enough for WORKER_CONCURRENCY's events to fit in the batches
 * in flight.
 */
const MAX_PROCESSING_BATCH = 64;
/**
 * Claim (or completion) batches at once. Two, as on the ack path by default: at moderate load a free
 * slot starts a batch of one, so fewer slots make batches fill (fewer statements per event), while a
 * batch held up by a slow handler still leaves one slot to the others.
 */
const PROCESSING_BATCHES_IN_FLIGHT = 2;
/**
 * Claim (or completion) batches at once while a full batch waits (see Batcher's
 * `maxInFlightWhenFull`): across a network, a completion is a dozen round trips, and two at a time
 * left processing behind a moderate load while the cores idled. Four claims and four completions
 * leave the default pool (DB_POOL_SIZE 10) room for the outbox and the sweeper.
 */
const FULL_PROCESSING_BATCHES_IN_FLIGHT = 4;

/** What a KyselyInboxStore is made of (openStore chooses each from DATABASE_URL and the settings). */
export interface KyselyInboxStoreOptions {
  /** Connections of everything but the acknowledgement path: workers, operators, migrations. */
  db: Kysely<InboxDatabase>;
  /** Connections of the acknowledgement path alone (see EventRecorder). */
  ackDb: Kysely<InboxDatabase>;
  /** Record batches running at once, one per connection of `ackDb`. */
  recordBatches: number;
  /** What differs per database. */
  backend: StoreBackend;
  clock: Clock;
  /** The DATABASE_URL both pools connect to; migrating creates its database where it does not exist. */
  url: string;
  /** Those of the domains in use, applied with the inbox's own. */
  domainMigrations: DomainMigrations;
  /** How long a claim or a completion waits for others to share its transaction (Batcher's `waitMs`). */
  processingBatchWaitMs: number;
}

/**
 * The store, written once over Kysely: each operation lives in its own file (record, claim, complete,
 * payment locks, event queries); this class batches the workers' operations (see Batcher) and meets
 * the database's errors (see DatabaseErrors). The backend supplies what differs per database.
 */
export class KyselyInboxStore implements InboxStore {
  readonly backend: string;
  /**
   * The database it works on, for the composition root to hand on (Inbox.database): the port gives
   * no one else a way to write an event's state but through the store's operations.
   */
  readonly db: Kysely<InboxDatabase>;
  private readonly ackDb: Kysely<InboxDatabase>;
  private readonly storeBackend: StoreBackend;
  private readonly clock: Clock;
  private readonly url: string;
  private readonly domainMigrations: DomainMigrations;
  private readonly errors: DatabaseErrors;
  private readonly recorder: EventRecorder;
  private readonly claims: Batcher<ClaimRequest, ClaimedEvent | null>;
  private readonly completions: Batcher<CompletionRequest, EventOutcome>;

  constructor(options: KyselyInboxStoreOptions) {
    ({ db: this.db, ackDb: this.ackDb, backend: this.storeBackend, clock: this.clock, url: this.url, domainMigrations: this.domainMigrations } = options);
    const { storeBackend } = this;
    this.backend = storeBackend.name;
    this.errors = new DatabaseErrors(storeBackend);
    this.recorder = new EventRecorder(this.ackDb, options.recordBatches, storeBackend, this.errors, this.clock);
    const processing = {
      maxBatch: MAX_PROCESSING_BATCH,
      maxInFlight: Math.min(PROCESSING_BATCHES_IN_FLIGHT, storeBackend.maxConcurrentBatches),
      maxInFlightWhenFull: Math.min(FULL_PROCESSING_BATCHES_IN_FLIGHT, storeBackend.maxConcurrentBatches),
      waitMs: options.processingBatchWaitMs,
    };
    this.claims = new Batcher(
      claimsByOwner((ids, owner, leaseMs) => this.errors.withConflictRetries(() => claimBatch(this.db, ids, owner, leaseMs, this.clock.now()))),
      processing,
    );
    this.completions = new Batcher((requests) => this.completeMany(requests), processing);
  }

  migrate(): Promise<string[]> {
    return this.errors.guard(() => migrateToLatest(this.db, this.storeBackend, this.url, this.domainMigrations));
  }

  pendingMigrations(): Promise<string[]> {
    return this.errors.guard(() => pendingMigrations(this.db, this.storeBackend, this.domainMigrations));
  }

  settingWarnings(): Promise<string[]> {
    return this.errors.guard(() => this.storeBackend.startupWarnings(this.db));
  }

  async ping(): Promise<void> {
    await this.errors.guard(() => sql`select 1`.execute(this.db));
  }

  record(event: VerifiedEvent, paymentId: string | null = null): Promise<RecordResult> {
    return this.recorder.record(event, paymentId);
  }

  claim(id: number, owner: string, leaseMs: number): Promise<ClaimedEvent | null> {
    return this.claims.submit({ id, owner, leaseMs });
  }

  completeFenced(lease: Lease, work: CompletionWork): Promise<EventOutcome> {
    return this.completions.submit({ lease, work });
  }

  /**
   * Completes `requests` in one transaction, a payment's events one after the other in the order they
   * were submitted (see completeBatch); a second event of a payment would wait for the first's lock in
   * a transaction of its own anyway.
   */
  private async completeMany(requests: CompletionRequest[]): Promise<Array<PromiseSettledResult<EventOutcome>>> {
    const now = () => this.clock.now();
    const { lockingReads } = this.storeBackend;
    const rounds = paymentRounds(
      requests.map((request, index) => ({ request, index })),
      ({ request }) => request.lease.payment,
    );
    const results: Array<PromiseSettledResult<EventOutcome>> = [];
    if (requests.length > 1) {
      try {
        const outcomes = await this.errors.withConflictRetries(() =>
          completeBatch(
            this.db,
            rounds.map((round) => round.map(({ request }) => request)),
            lockingReads,
            now,
          ),
        );
        if (outcomes) {
          rounds.flat().forEach(({ index }, i) => (results[index] = { status: 'fulfilled', value: outcomes[i]! }));
          return results;
        }
      } catch (error) {
        if (this.storeBackend.isUnavailable(error)) throw this.errors.translate(error);
      }
    }
    // Alone, or the batch could not commit as a whole: each event in its own transaction, so a
    // failure or a lost lease stays with its event; round after round, so a payment's events still
    // complete one after the other.
    for (const round of rounds) {
      const settled = await Promise.allSettled(round.map(({ request }) => this.errors.withConflictRetries(() => completeOne(this.db, request, lockingReads, now))));
      round.forEach(({ index }, i) => (results[index] = settled[i]!));
    }
    return results;
  }

  fail(lease: Lease, error: string, retryAt: Date | null): Promise<boolean> {
    return this.errors.withConflictRetries(() => failAttempt(this.db, lease, error, retryAt, this.clock.now()));
  }

  dueEventIds(limit: number, overdueMs = 0): Promise<number[]> {
    return this.errors.guard(() => dueEventIds(this.db, new Date(this.clock.now().getTime() - overdueMs), limit));
  }

  eventState(id: number): Promise<EventState | null> {
    return this.errors.guard(() => eventById(this.db, id));
  }

  findEvent(provider: string, eventId: string): Promise<EventState | null> {
    return this.errors.guard(() => eventByKey(this.db, provider, eventId));
  }

  pipelineStats(): Promise<PipelineStats> {
    return this.errors.guard(() => pipelineStats(this.db, this.clock.now()));
  }

  makeDueForReplay(seen: SeenEvent, replayId: number): Promise<boolean> {
    return makeDueForReplay(this.db, seen, replayId, this.clock.now());
  }

  removeArchivedEvents(rows: EventRow[], archiveFile: string): Promise<number> {
    return removeArchivedEvents(this.db, rows, archiveFile, this.clock.now());
  }

  restoreEvent(event: RestoredEvent): Promise<boolean> {
    return restoreEvent(this.db, event);
  }

  isUnavailable(error: unknown): boolean {
    return this.errors.isUnavailable(error);
  }

  async close(): Promise<void> {
    await Promise.all([this.ackDb.destroy(), this.db.destroy()]);
  }
}
