import type { Selectable } from 'kysely';
import type { PaymentsTable } from '../db/schema.js';
import type { AppliedOutcome, StaleOutcome } from '../model/outcome.js';
import { metadataOf, PAYMENT_STATE_ORDER, type PaymentEvent, type PaymentMetadata, type PaymentState } from '../model/payment-event.js';

/** The details of a payment that its events fill in: each keeps the first value an event gave it. */
export const DETAILS = ['email', 'amount', 'currency'] as const satisfies ReadonlyArray<keyof Selectable<PaymentsTable>>;
export type PaymentDetails = Pick<Selectable<PaymentsTable>, (typeof DETAILS)[number]>;

/** What deciding a payment's change needs of it: its state, its details and its metadata as stored (JSON text). */
export type PaymentSnapshot = Pick<Selectable<PaymentsTable>, 'status' | 'metadata'> & PaymentDetails;

/** What one event does to its payment, decided from the payment as it stands and the event alone. */
export interface PaymentPlan {
  /** The state before; null when the event creates the payment. */
  from: PaymentState | null;
  /** The state after: the later of the payment's and the event's (docs/design.md, invariant 4). */
  to: PaymentState;
  /** The event moves the payment forward, or creates it. */
  moves: boolean;
  /** The event fills in details or metadata keys an existing payment lacked: its handlers run again. */
  detailsCompleted: boolean;
  /** The details written: those the payment lacked that the event carries (all it carries when it creates it). */
  filled: Partial<PaymentDetails>;
  /** The metadata text written, and the stored text it replaces (a compare-and-set); null when it stays. */
  metadata: { from: string | null; to: string } | null;
  /** The payment as it stands after the event. */
  after: PaymentSnapshot;
  outcome: AppliedOutcome | StaleOutcome;
}

const rank = (state: PaymentState) => PAYMENT_STATE_ORDER.indexOf(state);

/**
 * The forward-only rule, with no database and no clock: a payment moves only to a later state, and
 * an event, stale or not, fills in the details and metadata keys the payment still lacks (a late
 * event may be the only one that carries the customer's metadata). `current` null: no payment yet.
 * Serves processing (payments.ts) and the replay's dry run (ops/payment-transition.ts).
 */
export function planPaymentChange(current: PaymentSnapshot | null, event: PaymentEvent): PaymentPlan {
  const carried = detailsOf(event);
  if (current === null) {
    const text = Object.keys(event.metadata).length === 0 ? null : JSON.stringify(event.metadata);
    return {
      from: null,
      to: event.state,
      moves: true,
      detailsCompleted: false,
      filled: Object.fromEntries(DETAILS.filter((column) => carried[column] !== null).map((column) => [column, carried[column]])),
      metadata: text === null ? null : { from: null, to: text },
      after: { status: event.state, ...carried, metadata: text },
      outcome: { kind: 'applied', paymentId: event.paymentId, from: null, to: event.state, detailsCompleted: false },
    };
  }
  const moves = rank(event.state) > rank(current.status);
  const to = moves ? event.state : current.status;
  const filled: Partial<PaymentDetails> = Object.fromEntries(
    DETAILS.filter((column) => carried[column] !== null && current[column] === null).map((column) => [column, carried[column]]),
  );
  const metadata = addedMetadata(current.metadata, event.metadata);
  const detailsCompleted = Object.keys(filled).length > 0 || metadata !== null;
  const outcome: PaymentPlan['outcome'] = moves
    ? { kind: 'applied', paymentId: event.paymentId, from: current.status, to, detailsCompleted }
    : { kind: 'stale', paymentId: event.paymentId, state: to, reported: event.state, detailsCompleted };
  const details = Object.fromEntries(DETAILS.map((column) => [column, current[column] ?? carried[column]])) as PaymentDetails;
  return { from: current.status, to, moves, detailsCompleted, filled, metadata, after: { status: to, ...details, metadata: metadata?.to ?? current.metadata }, outcome };
}

function detailsOf(event: PaymentEvent): PaymentDetails {
  return { email: event.email, amount: event.amountMinor, currency: event.currency };
}

/** Reads stored metadata; text that is not a JSON object (written by hand, say) reads as none. */
export function storedMetadata(text: string | null): PaymentMetadata {
  if (text === null) return {};
  try {
    return metadataOf(JSON.parse(text));
  } catch {
    return {};
  }
}

/** The stored metadata with the keys it lacked added from the event's, or null when it lacks none. */
function addedMetadata(stored: string | null, carried: PaymentMetadata): PaymentPlan['metadata'] {
  const current = storedMetadata(stored);
  const added = Object.entries(carried).filter(([name]) => !Object.hasOwn(current, name));
  return added.length === 0 ? null : { from: stored, to: JSON.stringify({ ...current, ...Object.fromEntries(added) }) };
}
