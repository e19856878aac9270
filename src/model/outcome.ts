import { isRecord } from './json.js';
import { PAYMENT_STATE_ORDER, type PaymentState } from './payment-event.js';

/**
 * What processing an event did, as it is stored with the event (`webhook_events.outcome_detail`, JSON)
 * and as the API and `--json` outputs give it (`outcomeDetail`). `outcomeText` says it in words.
 */
export type EventOutcome = AppliedOutcome | StaleOutcome | IgnoredOutcome | CustomOutcome;

/** The event moved its payment forward, or created it. */
export interface AppliedOutcome {
  kind: 'applied';
  paymentId: string;
  /** The state the payment was in before; null when the event created it. */
  from: PaymentState | null;
  to: PaymentState;
  /** The event also filled in details the payment lacked (e-mail, amount, metadata keys, ...). */
  detailsCompleted: boolean;
}

/** The event reported a state its payment had already reached or passed: the payment stays where it is. */
export interface StaleOutcome {
  kind: 'stale';
  paymentId: string;
  /** The state the payment is in, and stays in. */
  state: PaymentState;
  /** The state the event reported. */
  reported: PaymentState;
  /** The event still filled in details the payment lacked. */
  detailsCompleted: boolean;
}

/** The event changes no payment (a dispute, a partial refund, an event type the inbox does not act on). */
export interface IgnoredOutcome {
  kind: 'ignored';
  reason: string;
}

/** An outcome given as text by an application's own `apply`. */
export interface CustomOutcome {
  kind: 'custom';
  text: string;
}

export function customOutcome(text: string): CustomOutcome {
  return { kind: 'custom', text };
}

/** The outcome for people: the dashboard, the CLI, the API's `outcome` field and the logs all say it this way. */
export function outcomeText(outcome: EventOutcome): string {
  switch (outcome.kind) {
    case 'applied':
      return `applied: payment ${outcome.paymentId} ${outcome.to}`;
    case 'stale':
      return `ignored: payment already ${outcome.state}${outcome.detailsCompleted ? ' (details completed)' : ''}`;
    case 'ignored':
      return `ignored: ${outcome.reason}`;
    case 'custom':
      return outcome.text;
  }
}

const isState = (value: unknown): value is PaymentState => PAYMENT_STATE_ORDER.includes(value as PaymentState);

/** Whether `value` is an EventOutcome: what the store writes, and what an application's `apply` may return. */
export function isEventOutcome(value: unknown): value is EventOutcome {
  if (!isRecord(value)) return false;
  switch (value.kind) {
    case 'applied':
      return typeof value.paymentId === 'string' && (value.from === null || isState(value.from)) && isState(value.to) && typeof value.detailsCompleted === 'boolean';
    case 'stale':
      return typeof value.paymentId === 'string' && isState(value.state) && isState(value.reported) && typeof value.detailsCompleted === 'boolean';
    case 'ignored':
      return typeof value.reason === 'string';
    case 'custom':
      return typeof value.text === 'string';
    default:
      return false;
  }
}

/** An event's outcome as readers show it: `outcome` in words, `outcomeDetail` structured. */
export interface ShownOutcome {
  outcome: string | null;
  /**
   * Null for an event not processed yet, and for one processed before the inbox stored outcomes
   * structured: its `outcome` is the text stored then.
   */
  outcomeDetail: EventOutcome | null;
}

/**
 * An outcome as stored (`outcome` text, `outcome_detail` JSON) as readers show it. The structured form
 * wins, said by outcomeText; a row without one, or with one that is not an outcome (edited by hand),
 * shows its text.
 */
export function shownOutcome<Text extends string | null>(text: Text, detail: string | null): ShownOutcome & { outcome: string | Text } {
  const parsed = parseOutcome(detail);
  return parsed ? { outcome: outcomeText(parsed), outcomeDetail: parsed } : { outcome: text, outcomeDetail: null };
}

/** A stored `outcome_detail`: null when there is none, or when it is not an outcome (edited by hand). */
export function parseOutcome(detail: string | null): EventOutcome | null {
  if (detail === null) return null;
  try {
    const value: unknown = JSON.parse(detail);
    return isEventOutcome(value) ? value : null;
  } catch {
    return null;
  }
}
