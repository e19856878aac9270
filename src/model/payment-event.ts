/**
 * The provider-neutral meaning of a webhook: which payment it is about and which state it reports.
 * Provider adapters translate their events into this; the domain never looks at provider payloads.
 */
export type PaymentState = 'created' | 'failed' | 'authorized' | 'captured' | 'refunded';

/**
 * The forward-only order of payment states. `failed` sits before `authorized` because providers report
 * late authorisations (failed -> authorized, Razorpay) but a captured payment never fails afterwards.
 * A total order keeps the final state independent of delivery order: it is the highest state reported.
 */
export const PAYMENT_STATE_ORDER: readonly PaymentState[] = ['created', 'failed', 'authorized', 'captured', 'refunded'];

/** States a payment may move out of to reach `target`. */
export function statesBefore(target: PaymentState): PaymentState[] {
  return PAYMENT_STATE_ORDER.slice(0, PAYMENT_STATE_ORDER.indexOf(target));
}

export interface PaymentEvent {
  kind: 'payment';
  paymentId: string;
  state: PaymentState;
  /** In the currency's smallest unit (cents, paise). */
  amountMinor: number | null;
  /** ISO 4217, upper case (Stripe sends lower case). */
  currency: string | null;
  /** The payer's e-mail address, as the provider reported it. */
  email: string | null;
  /**
   * The merchant's own data on the payment, whole: Stripe `metadata`, Razorpay `notes`, PayU `udf1`-`udf5`.
   * What a business means by it (a user, an order, a plan) is its domain's to read.
   */
  metadata: PaymentMetadata;
}

/** Key-value text a merchant attaches to a payment when it creates it. */
export type PaymentMetadata = Record<string, string>;

/** A verified event that changes no payment (disputes, partial refunds, unknown types). */
export interface IgnoredEvent {
  kind: 'ignored';
  reason: string;
}

export type CanonicalEvent = PaymentEvent | IgnoredEvent;

export function ignored(reason: string): IgnoredEvent {
  return { kind: 'ignored', reason };
}

/** Reads optional string metadata that providers may send as strings, numbers or not at all. */
export function metadataString(value: unknown): string | null {
  if (typeof value === 'string') return value.trim() === '' ? null : value.trim();
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  return null;
}

/**
 * A provider's metadata object, whole: text as sent, numbers and booleans as text (providers send
 * text, a hand-made test event may not), anything else (an array, a nested object) left out.
 */
export function metadataOf(value: unknown): PaymentMetadata {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return {};
  const metadata: PaymentMetadata = {};
  for (const [key, item] of Object.entries(value)) {
    if (typeof item === 'string') metadata[key] = item;
    else if ((typeof item === 'number' && Number.isFinite(item)) || typeof item === 'boolean') metadata[key] = String(item);
  }
  return metadata;
}
