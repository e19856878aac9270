import type { Clock } from '../clock.js';
import { PermanentError } from '../errors.js';
import { MAX_KEY_LENGTH, MAX_SHORT_TEXT_LENGTH, unstorableText } from '../providers/delivery.js';
import type { ProviderRegistry } from '../providers/registry.js';
import { toDbTime, type DbTime } from '../store/schema.js';
import type { BusinessTransaction, CompletionBatch, InboxEvent } from '../store/store.js';
import type { PaymentState } from './payment-event.js';
import { advancePayment, type Payment } from './payments.js';

export interface PaymentContext {
  /** The processing transaction: every write here commits with "event processed", or not at all. */
  tx: BusinessTransaction;
  payment: Payment;
  event: InboxEvent;
  now: DbTime;
  /** Aborted when the worker's lease runs out; the commit would be refused after that anyway. */
  signal: AbortSignal;
  /** The completion batch the event is part of: `batch.atCommit` shares one write among its events. */
  batch: CompletionBatch;
}

/**
 * Business effects for a payment that reached a state. Handlers must be idempotent on their own
 * (unique keys, INSERT IGNORE): they run again when a later event completes the payment's details.
 */
export type PaymentHandler = (context: PaymentContext) => Promise<void>;
export type PaymentHandlers = Partial<Record<PaymentState, PaymentHandler[]>>;

/**
 * Applies one stored event inside the processing transaction and returns its outcome text. `batch`
 * names the payments of every event the transaction completes, for reads shared among them.
 */
export type EventApplier = (tx: BusinessTransaction, event: InboxEvent, signal: AbortSignal, batch: CompletionBatch) => Promise<string>;

const STALE_OUTCOME = 'ignored: payment already ';

/** The text fields of a payment event that are stored, with the length of their columns. */
const STORED_FIELDS = [
  ['paymentId', MAX_KEY_LENGTH],
  ['userId', MAX_KEY_LENGTH],
  ['courseId', MAX_KEY_LENGTH],
  ['email', MAX_KEY_LENGTH],
  ['currency', MAX_SHORT_TEXT_LENGTH],
] as const;

/**
 * The standard applier: provider event -> canonical payment event -> forward-only payment state ->
 * the handlers registered for the state the payment is in.
 */
export function paymentApplier(options: { providers: ProviderRegistry; handlers: PaymentHandlers; clock: Clock }): EventApplier {
  return async (tx, event, signal, batch) => {
    const canonical = options.providers.toCanonical(event.provider, event);
    if (canonical.kind === 'ignored') return `ignored: ${canonical.reason}`;

    // MySQL's INSERT IGNORE would store the first 255 characters (64 of a currency), and both drivers a
    // lone surrogate as U+FFFD: another payment's or user's key. Refused instead, for an operator.
    for (const [field, maxLength] of STORED_FIELDS) {
      const value = canonical[field];
      const unstorable = value === null ? null : unstorableText(value, maxLength);
      if (unstorable) throw new PermanentError(`the event's ${field} ${unstorable}, so it cannot be stored whole`);
    }
    const now = toDbTime(options.clock.now());
    const change = await advancePayment(tx, event.provider, canonical, now, batch);
    const state = change.payment.status;
    if (change.applied || change.enriched) {
      for (const handler of options.handlers[state] ?? []) {
        await handler({ tx, payment: change.payment, event, now, signal, batch });
      }
    }
    if (change.applied) return `applied: payment ${canonical.paymentId} ${state}`;
    return `${STALE_OUTCOME}${state}${change.enriched ? ' (details completed)' : ''}`;
  };
}

/** The state a stale event found its payment in, read from the outcome written above; else null. */
export function staleState(outcome: string): PaymentState | null {
  if (!outcome.startsWith(STALE_OUTCOME)) return null;
  return (outcome.slice(STALE_OUTCOME.length).split(' ')[0] as PaymentState | undefined) ?? null;
}
