import type { Transaction } from 'kysely';
import type { EventRow } from '../db/event-rows.js';
import type { ProviderName, VerifiedEvent } from '../model/delivery.js';
import type { RecordResult } from '../db/recording/record-path.js';
import type { EventStatus, InboxDatabase } from '../db/schema.js';
import type { EventOutcome, ShownOutcome } from '../model/outcome.js';
import type { RestoredEvent, SeenEvent } from './operator-writes.js';

/** The payment an event is about, as recorded with the event. */
export interface PaymentRef {
  provider: string;
  paymentId: string;
}

/** A stored event as workers and handlers see it. */
export interface InboxEvent {
  id: number;
  provider: ProviderName;
  eventId: string;
  eventType: string;
  payload: unknown;
  headers: Record<string, string>;
  attempts: number;
  createdAt: Date;
}

export type { RecordResult };

/** Proof of ownership of one event for a bounded time; the token fences every write that follows. */
export interface Lease {
  id: number;
  owner: string;
  token: string;
  expiresAt: Date;
  /** When this attempt was claimed (its start, as event_attempts records it if it fails). */
  claimedAt: Date;
  /** Attempts including this one. */
  attempts: number;
  /** The payment the event is about: the transaction that applies it locks the payment first (see payment-locks.ts). */
  payment: PaymentRef | null;
}

export interface ClaimedEvent {
  lease: Lease;
  event: InboxEvent;
  /** The event was in `processing` under an expired lease: its previous worker died or stalled. */
  takeover: boolean;
  /**
   * Why the stored row cannot be read (its payload is not valid JSON, say), when it cannot: the
   * attempt then fails with this reason and no retry, for an operator, and `event.payload` is null.
   */
  unreadable?: string;
}

export interface EventState extends ShownOutcome {
  id: number;
  provider: string;
  eventId: string;
  eventType: string;
  status: EventStatus;
  attempts: number;
  leaseOwner: string | null;
  nextAttemptAt: Date | null;
  lastError: string | null;
  createdAt: Date;
  processedAt: Date | null;
}

/** Counts for monitoring, each from an indexed query. */
export interface PipelineStats {
  /** Events a worker should take now: new, retry time reached, or lease expired. */
  due: number;
  /** Receipt time of the oldest event still to be processed (given-up events excluded). */
  oldestPendingAt: Date | null;
  /** Events in `processing` whose lease expired: waiting for a takeover. */
  stuck: number;
  /** Failed events with no automatic retry left: an operator must look at them. */
  failed: number;
}

export type BusinessTransaction = Transaction<InboxDatabase>;

/** What the works of one completion batch share, so that many events cost few statements. */
export interface CompletionBatch {
  /**
   * The payments of the batch's events, one event each, locked by its transaction. A transaction may
   * complete several batches one after the other, a payment's later events in later ones, each
   * seeing what the earlier batches wrote (see completeBatch).
   */
  readonly payments: PaymentRef[];
  /**
   * Runs `write` in the transaction after every work of the batch, before the next batch or the
   * fence: rows that many events add, and that nothing of the batch reads back, go as one statement.
   */
  atCommit(write: (tx: BusinessTransaction) => Promise<void>): void;
}

/** A completion's own business work, run inside the transaction that marks its event processed, with the event's outcome. */
export type CompletionWork = (tx: BusinessTransaction, batch: CompletionBatch) => Promise<EventOutcome>;

/**
 * The store port: everything the pipeline, the workers and the operators need from the database.
 * Every state change is a single conditional statement, so concurrent callers cannot both win.
 */
export interface InboxStore {
  readonly backend: string;

  /** Applies pending migrations; returns the names applied now. */
  migrate(): Promise<string[]>;

  /**
   * Inserts the event unless (provider, event_id) exists; returns once the insert is committed.
   * `paymentId` is the payment it is about: events of one payment are never processed at the same time.
   */
  record(event: VerifiedEvent, paymentId?: string | null): Promise<RecordResult>;

  /**
   * Takes the lease if the event is due: new, failed with its retry time reached, or processing with
   * an expired lease (takeover). Returns null when someone else holds it or nothing is due.
   */
  claim(id: number, owner: string, leaseMs: number): Promise<ClaimedEvent | null>;

  /**
   * Runs `work` and marks the event processed in ONE transaction. The transaction first locks the
   * event's payment, so another event of that payment, wherever it runs, waits for this one to
   * commit. The lease is checked by the same transaction just before commit; a lost or expired lease
   * throws LeaseLostError and rolls back. The event keeps the work's outcome, which this resolves to.
   */
  completeFenced(lease: Lease, work: CompletionWork): Promise<EventOutcome>;

  /** Records a failed attempt, fenced by the lease. `retryAt` null means no automatic retry. */
  fail(lease: Lease, error: string, retryAt: Date | null): Promise<boolean>;

  /** Ids of events due for at least `overdueMs` (default 0), oldest due first. */
  dueEventIds(limit: number, overdueMs?: number): Promise<number[]>;

  eventState(id: number): Promise<EventState | null>;
  findEvent(provider: string, eventId: string): Promise<EventState | null>;

  pipelineStats(): Promise<PipelineStats>;

  /** A replay's reset of a failed or processed event, unless it changed since `seen` (see operator-writes.ts). */
  makeDueForReplay(seen: SeenEvent, replayId: number): Promise<boolean>;
  /** Removes processed events whose archive line was read back intact, keeping their keys under `archiveFile`; returns how many went. */
  removeArchivedEvents(rows: EventRow[], archiveFile: string): Promise<number>;
  /** Puts an archived event back as it was; false when its row is already there. */
  restoreEvent(event: RestoredEvent): Promise<boolean>;

  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  /** Names of the migrations not applied yet (empty when the schema is current). */
  pendingMigrations(): Promise<string[]>;
  /**
   * Server settings that put acknowledged events at risk, each a sentence for the start-up log
   * (PostgreSQL's synchronous_commit turned off, say); empty when there are none.
   */
  settingWarnings(): Promise<string[]>;

  /**
   * Whether `error` says the database cannot be reached or refuses this service: the store's own
   * StoreUnavailableError, or a driver error from a query run on the inbox's database.
   */
  isUnavailable(error: unknown): boolean;

  close(): Promise<void>;
}
