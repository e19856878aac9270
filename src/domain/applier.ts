import type { Transaction } from 'kysely';
import type { Clock } from '../clock.js';
import { PermanentError } from '../errors.js';
import { MAX_KEY_LENGTH, MAX_SHORT_TEXT_LENGTH, unstorableText } from '../model/delivery.js';
import { toDbTime, type DbTime, type InboxDatabase } from '../db/schema.js';
import type { BusinessTransaction, CompletionBatch, InboxEvent } from '../store/inbox-store.js';
import type { CanonicalEvent, PaymentState } from '../model/payment-event.js';
import { customOutcome, isEventOutcome, type EventOutcome } from '../model/outcome.js';
import { isRecord } from '../model/json.js';
import { advancePayment, type Payment } from './payments.js';

/**
 * What every handler gets. `DB` is the database as the handler's domain knows it: the inbox's tables
 * and its own (`interface MyDatabase extends InboxDatabase { grants: GrantsTable }`).
 */
export interface EventContext<DB extends InboxDatabase = InboxDatabase> {
  /** The processing transaction: every write here commits with "event processed", or not at all. */
  tx: Transaction<DB>;
  event: InboxEvent;
  now: DbTime;
  /** Aborted when the worker's lease runs out; the commit would be refused after that anyway. */
  signal: AbortSignal;
  /** The completion batch the event is part of: `batch.atCommit` shares one write among its events. */
  batch: CompletionBatch;
  /** Outbox kinds no transport delivers in this process, with the outcome their rows are written with. */
  skippedOutboxKinds?: ReadonlyMap<string, string>;
}

export interface PaymentContext<DB extends InboxDatabase = InboxDatabase> extends EventContext<DB> {
  /** The payment as it will commit, with all its metadata. */
  payment: Payment;
  /**
   * The state it was in before this event; null when the event created it. Equal to
   * `payment.status` when the event only completed details of a payment already in that state.
   */
  previousStatus: PaymentState | null;
}

/**
 * Business effects for a payment that reached a state. Handlers must be idempotent on their own
 * (unique keys, INSERT IGNORE): they run again when a later event completes the payment's details.
 */
export type PaymentHandler<DB extends InboxDatabase = InboxDatabase> = (context: PaymentContext<DB>) => Promise<void>;
export type PaymentHandlers<DB extends InboxDatabase = InboxDatabase> = Partial<Record<PaymentState, Array<PaymentHandler<DB>>>>;

/** Runs for every event processed, about a payment or not, with what the event means. */
export type EventHandler<DB extends InboxDatabase = InboxDatabase> = (context: EventContext<DB> & { canonical: CanonicalEvent }) => Promise<void>;

/**
 * What applying an event did, given as text: stored as a `custom` outcome. The form of earlier
 * versions, still taken from an application's own EventApplier; an EventOutcome says more.
 */
export interface TextOutcome {
  text: string;
  /** Set when the event reported a state its payment had already passed: the later state it was in (counted by the metrics). */
  staleState?: PaymentState;
}

/**
 * Applies one stored event inside the processing transaction and says what it did: an EventOutcome
 * (`{ kind: 'custom', text }` when none of the others fits), or text. `batch` names the payments of
 * every event the transaction completes, for reads shared among them.
 */
export type EventApplier = (tx: BusinessTransaction, event: InboxEvent, signal: AbortSignal, batch: CompletionBatch) => Promise<EventOutcome | TextOutcome | string>;

/** What a stored event means for a payment: the providers' normalisers, by provider name. */
export type ToCanonical = (provider: string, event: { eventType: string; payload: unknown }) => CanonicalEvent;

/** The text fields of a payment event that are stored, with the length of their columns. */
const STORED_FIELDS = [
  ['paymentId', MAX_KEY_LENGTH],
  ['email', MAX_KEY_LENGTH],
  ['currency', MAX_SHORT_TEXT_LENGTH],
] as const;

/**
 * The standard applier: provider event -> canonical payment event -> forward-only payment state ->
 * the handlers registered for the state the payment is in. Event handlers run first, for every event.
 */
export function paymentApplier(options: {
  toCanonical: ToCanonical;
  handlers: PaymentHandlers;
  eventHandlers?: EventHandler[];
  clock: Clock;
  skippedOutboxKinds?: ReadonlyMap<string, string>;
}): EventApplier {
  const { skippedOutboxKinds } = options;
  return async (tx, event, signal, batch) => {
    const canonical = options.toCanonical(event.provider, event);
    const now = toDbTime(options.clock.now());
    for (const handler of options.eventHandlers ?? []) await handler({ tx, event, canonical, now, signal, batch, skippedOutboxKinds });
    if (canonical.kind === 'ignored') return { kind: 'ignored', reason: canonical.reason };

    // MySQL's INSERT IGNORE would store the first 255 characters (64 of a currency), and both drivers a
    // lone surrogate as U+FFFD: another payment's key. Refused instead, for an operator.
    for (const [field, maxLength] of STORED_FIELDS) {
      const value = canonical[field];
      const unstorable = value === null ? null : unstorableText(value, maxLength);
      if (unstorable) throw new PermanentError(`the event's ${field} ${unstorable}, so it cannot be stored whole`);
    }
    const change = await advancePayment(tx, event.provider, canonical, now, batch);
    if (change.applied || change.enriched) {
      for (const handler of options.handlers[change.payment.status] ?? []) {
        await handler({ tx, payment: change.payment, previousStatus: change.previous, event, now, signal, batch, skippedOutboxKinds });
      }
    }
    return change.outcome;
  };
}

/**
 * What an EventApplier returned, as the event's outcome is stored, with the state a stale event found
 * its payment in (for the metrics). Anything else than the forms it may return is refused: stored, it
 * would read as no outcome at all.
 */
export function appliedOutcome(returned: EventOutcome | TextOutcome | string): { outcome: EventOutcome; staleState?: PaymentState } {
  if (typeof returned === 'string') return { outcome: customOutcome(returned) };
  if (isEventOutcome(returned)) return returned.kind === 'stale' ? { outcome: returned, staleState: returned.state } : { outcome: returned };
  const text: unknown = isRecord(returned) && !('kind' in returned) ? returned.text : undefined;
  if (typeof text !== 'string') throw new PermanentError(`the event's applier returned ${describeReturned(returned)}, not an outcome (EventOutcome, or text)`);
  return returned.staleState ? { outcome: customOutcome(text), staleState: returned.staleState } : { outcome: customOutcome(text) };
}

function describeReturned(value: unknown): string {
  if (isRecord(value)) return typeof value.kind === 'string' ? `an outcome of unknown kind or fields (kind ${JSON.stringify(value.kind)})` : 'an object without text';
  return value === null ? 'null' : typeof value;
}
