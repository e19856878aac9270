import type { Generated } from 'kysely';
import type { EventSource } from '../model/delivery.js';
import type { PaymentState } from '../model/payment-event.js';

/**
 * Table shapes (docs/how-it-works.md, Data model). Times are UTC strings 'YYYY-MM-DD HH:MM:SS.mmm' in every
 * store: DATETIME(3) in MySQL, TEXT in SQLite; the format sorts and compares the same in both.
 */
export type DbTime = string;

export type EventStatus = 'received' | 'processing' | 'processed' | 'failed';

export interface WebhookEventsTable {
  id: Generated<number>;
  provider: string;
  event_id: string;
  event_type: string;
  status: EventStatus;
  attempts: number;
  lease_owner: string | null;
  lease_token: string | null;
  lease_expires_at: DbTime | null;
  /**
   * When the event is next due for a worker: at receipt for a new event, at lease expiry while it is
   * processing, at the retry time after a failure; NULL once processed or given up. The sweeper reads
   * this single indexed column.
   */
  next_attempt_at: DbTime | null;
  last_error: string | null;
  /** What its processing did, in words (outcomeText); the latest processing's. */
  outcome: string | null;
  /**
   * The same outcome structured (EventOutcome as JSON), written by the statement that writes
   * `outcome`; NULL for an event processed before migration 0032 (its text is all there is).
   */
  outcome_detail: Generated<string | null>;
  created_at: DbTime;
  processed_at: DbTime | null;
  /** The payment the event is about (from the provider's normaliser at receipt), or NULL. */
  payment_id: string | null;
  /** How the event came in: a provider's delivery, or reconciliation with the provider's API. */
  source: Generated<EventSource>;
  /** When the current or last attempt was claimed (set by the claim itself); NULL before the first. */
  claimed_at: Generated<DbTime | null>;
}

/**
 * What an event was delivered with, one row per event, written by the transaction that records the
 * event and never updated: the event's own row, rewritten by every claim and completion, stays a few
 * hundred bytes (docs/how-it-works.md, Data model).
 */
export interface WebhookEventBodiesTable {
  /** webhook_events.id of the event: the primary key. */
  event_row_id: number;
  /** JSON text as received (raw body verbatim; PayU form posts normalised to a JSON object). */
  payload: string;
  /** JSON object of the headers needed to verify the event again. */
  headers: string;
}

/** How an attempt that did not process its event ended. */
export type AttemptOutcome = 'failed' | 'gave_up' | 'lease_expired';

/**
 * One attempt at an event that did not succeed: written with the failure, or by the claim that took
 * over an expired lease. At most one per claim, so an event has as many as its attempts allowed.
 */
export interface EventAttemptsTable {
  id: Generated<number>;
  event_row_id: number;
  /** The event's attempt count at the time (1 for the first; a replay starts counting again). */
  attempt: number;
  /** lease_owner of the worker (host:pid:...), when known. */
  owner: string | null;
  outcome: AttemptOutcome;
  /** The error, cut to EVENT_ATTEMPT_ERROR_MAX characters. */
  error: string | null;
  /** NULL when the claim time is not known (an attempt from before migration 0017). */
  started_at: DbTime | null;
  /** The failure's time, or the expiry of the lease that was lost. */
  ended_at: DbTime;
}

export type BulkReplayState = 'running' | 'finished' | 'cancelled' | 'error';

/** One bulk replay by filter: progress and cancel request, shared by every serve process. */
export interface BulkReplaysTable {
  id: Generated<number>;
  /** The job's public id (a UUID). */
  job_key: string;
  actor: string;
  reason: string;
  /** The filter as JSON. */
  filter: string;
  total: number;
  done: number;
  processed: number;
  failed: number;
  skipped: number;
  state: BulkReplayState;
  error: string | null;
  /** 1 once an operator asked it to stop: the runner stops after the event in hand. */
  cancel_requested: number;
  /** The process running it (host:pid). */
  runner: string;
  /** Written by the runner after each event and on a timer: an old one means the runner died. */
  heartbeat_at: DbTime;
  started_at: DbTime;
  finished_at: DbTime | null;
}

/**
 * One row per payment that had an event claimed, made by the claim: the transaction that applies an
 * event locks its payment's row first, so two events of one payment are never processed at the same
 * time (see store/payment-locks.ts).
 */
export interface PaymentLeasesTable {
  id: Generated<number>;
  provider: string;
  payment_id: string;
}

export interface PaymentsTable {
  id: Generated<number>;
  provider: string;
  payment_id: string;
  status: PaymentState;
  amount: number | null;
  currency: string | null;
  email: string | null;
  created_at: DbTime;
  updated_at: DbTime;
  /** The merchant's metadata (PaymentMetadata) as JSON text; NULL when the events carried none. */
  metadata: string | null;
}

/**
 * `pending` waits for its first attempt or a retry; `sending` is leased by a dispatcher; `sent`,
 * `skipped` (no transport configured) and `failed` (permanent error or attempts used up) are final
 * until an operator retries the row.
 */
export type OutboxStatus = 'pending' | 'sending' | 'sent' | 'failed' | 'skipped';

export interface OutboxTable {
  id: Generated<number>;
  /** Stable per business effect (e.g. one receipt per payment), never per delivery or attempt. */
  idempotency_key: string;
  kind: string;
  payload: string;
  status: OutboxStatus;
  attempts: number;
  /** Due time while pending, lease expiry while sending (so a takeover is found by the same query). */
  next_attempt_at: DbTime | null;
  last_error: string | null;
  created_at: DbTime;
  sent_at: DbTime | null;
  lease_owner: Generated<string | null>;
  lease_token: Generated<string | null>;
  lease_expires_at: Generated<DbTime | null>;
  /** Another row's key that must be final first (a cancellation waits for what it cancels). */
  depends_on_key: Generated<string | null>;
  /** What the downstream answered when the row was finished (or why it was skipped). */
  outcome: Generated<string | null>;
  /** Rows with the same ordering key are delivered one at a time, in the order they were written. */
  ordering_key: Generated<string | null>;
}

/** One operator replay of one event: who asked, when, why, what the event was before, what happened. */
export interface EventReplaysTable {
  id: Generated<number>;
  event_row_id: number;
  provider: string;
  event_id: string;
  actor: string;
  reason: string;
  previous_status: EventStatus;
  previous_attempts: number;
  previous_error: string | null;
  /**
   * The processing the replay replaced, when the event was processed: its outcome, when it was
   * processed, when its attempt was claimed and by which worker (the event row's outcome,
   * processed_at, claimed_at and lease_owner as the replay read them). NULL for another status.
   */
  previous_outcome: string | null;
  /** The replaced processing's outcome_detail; NULL as the event's was, or for a replay recorded before migration 0032. */
  previous_outcome_detail: Generated<string | null>;
  previous_processed_at: DbTime | null;
  previous_claimed_at: DbTime | null;
  previous_owner: string | null;
  /**
   * When the replay made the event due again, in the transaction that reset it; NULL when it did not
   * (the event changed or was leased meanwhile, was not processed or failed yet, or the replay was
   * recorded before migration 0028). A replay with it set replaced its previous processing.
   */
  made_due_at: DbTime | null;
  /** NULL while the replay runs (or if it was interrupted). */
  result: string | null;
  requested_at: DbTime;
  finished_at: DbTime | null;
}

/**
 * What stays behind when an event is archived: its key, so a redelivery is still a duplicate, and
 * where the archived copy is.
 */
export interface ArchivedEventKeysTable {
  id: Generated<number>;
  provider: string;
  event_id: string;
  /** webhook_events.id the event had; duplicates of it answer with this id. */
  event_row_id: number;
  event_created_at: DbTime;
  archive_file: string;
  archived_at: DbTime;
}

/** Deliveries answered in one minute by one provider with one result, summed over every process. */
export interface DeliveryStatsTable {
  id: Generated<number>;
  /** The minute's start. */
  minute: DbTime;
  provider: string;
  result: string;
  deliveries: number;
  /** Sum of the acknowledgement times, for the mean. */
  ack_ms_total: number;
  ack_ms_max: number;
}

/** One refused delivery, never its body or signature; `slot` is its place in a fixed-size ring. */
export interface RejectedDeliveriesTable {
  id: Generated<number>;
  slot: number;
  rejected_at: DbTime;
  provider: string;
  status_code: number;
  reason: string;
  remote_address: string | null;
  body_bytes: number | null;
}

/** What needed attention at one minute (the overview's backlog and failure charts). */
export interface PipelineSamplesTable {
  id: Generated<number>;
  minute: DbTime;
  due: number;
  oldest_pending_seconds: number | null;
  failed: number;
  stuck: number;
  outbox_failed: number;
}

/** One admin action (replay, retry, bulk replay): who, with which role, on what, why, what happened. */
export interface AdminActionsTable {
  id: Generated<number>;
  actor: string;
  role: string;
  action: string;
  target: string;
  reason: string | null;
  result: string | null;
  at: DbTime;
}

/** One dashboard sign-in, until its expiry or its sign-out (which deletes the row). */
export interface AdminSessionsTable {
  id: Generated<number>;
  /** SHA-256 (hex) of the session id the cookie carries: the id itself is never stored. */
  session_hash: string;
  /** The ADMIN_TOKENS name it signed in with: its role is read from that entry at each request. */
  actor: string;
  created_at: DbTime;
  expires_at: DbTime;
  /** Moved forward at most once a minute. */
  last_seen_at: DbTime;
}

/** One refused admin token (sign-in form or bearer), by client address: the sign-in limit counts these. */
export interface AdminSignInFailuresTable {
  id: Generated<number>;
  /** The client address (an IPv6 one by its /64). */
  client: string;
  failed_at: DbTime;
}

/** `running` until it ends; a `running` run whose lock expired crashed, and the next run resumes it. */
export type ReconcileRunStatus = 'running' | 'finished' | 'failed';

/** One reconciliation run of one provider: its window, what it found and recorded, how far it got. */
export interface ReconcileRunsTable {
  id: Generated<number>;
  /** Random and unique: how the run finds its own row on every store. */
  run_key: string;
  provider: string;
  window_start: DbTime;
  window_end: DbTime;
  /** 1 for `--dry-run`: found, nothing recorded. */
  dry_run: number;
  status: ReconcileRunStatus;
  found: number;
  recorded: number;
  errors: number;
  /** Where the provider's listing continues (provider-specific text), committed as the run goes. */
  cursor: string | null;
  last_error: string | null;
  started_at: DbTime;
  finished_at: DbTime | null;
}

/** A lock of one operation across processes: held by `owner` until `expires_at` (renewed while it runs). */
export interface OperationLocksTable {
  id: Generated<number>;
  name: string;
  owner: string;
  expires_at: DbTime;
}

/** The last tick of a scheduled job that a process ran: the one that moved it forward ran it. */
export interface ScheduledRunsTable {
  id: Generated<number>;
  job: string;
  last_tick: DbTime;
  owner: string;
}

/** An alert that fires (`<provider>:<rule>`), since the check that first saw it: posted once while here. */
export interface FiringAlertsTable {
  id: Generated<number>;
  alert_key: string;
  since: DbTime;
}

/**
 * The inbox's own tables. A domain with tables of its own (a shipped one, a team's handlers)
 * extends it: `interface MyDatabase extends InboxDatabase { grants: GrantsTable }`.
 */
export interface InboxDatabase {
  webhook_events: WebhookEventsTable;
  webhook_event_bodies: WebhookEventBodiesTable;
  payments: PaymentsTable;
  outbox: OutboxTable;
  payment_leases: PaymentLeasesTable;
  event_replays: EventReplaysTable;
  event_attempts: EventAttemptsTable;
  bulk_replays: BulkReplaysTable;
  archived_event_keys: ArchivedEventKeysTable;
  delivery_stats: DeliveryStatsTable;
  rejected_deliveries: RejectedDeliveriesTable;
  pipeline_samples: PipelineSamplesTable;
  admin_actions: AdminActionsTable;
  admin_sessions: AdminSessionsTable;
  admin_sign_in_failures: AdminSignInFailuresTable;
  reconcile_runs: ReconcileRunsTable;
  operation_locks: OperationLocksTable;
  scheduled_runs: ScheduledRunsTable;
  firing_alerts: FiringAlertsTable;
}

export function toDbTime(date: Date): DbTime {
  return date.toISOString().slice(0, 23).replace('T', ' ');
}

export function fromDbTime(value: DbTime): Date {
  return new Date(`${value.replace(' ', 'T')}Z`);
}
