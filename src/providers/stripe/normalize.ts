import { ignored, metadataOf, type CanonicalEvent, type PaymentState } from '../../model/payment-event.js';
import { integerAt, path, stringAt } from '../payload.js';
import { isRecord } from '../../model/json.js';
import type { Normalizer } from '../provider.js';

/**
 * Stripe events -> payment states. The payment is identified by its PaymentIntent, so a
 * payment_intent.succeeded and the charge.succeeded Stripe sends for the same payment meet on one row.
 */
export const stripeToCanonical: Normalizer = ({ eventType, payload }) => {
  const object = path(payload, 'data', 'object');
  if (!isRecord(object)) return ignored(`stripe ${eventType} has no data.object`);
  const state = stateOf(eventType, object);
  if (typeof state !== 'string') return state;

  const paymentId = eventType.startsWith('payment_intent.') ? stringAt(object, 'id') : stringAt(object, 'payment_intent');
  if (paymentId === null) return ignored(`stripe ${eventType} is not tied to a PaymentIntent`);
  return {
    kind: 'payment',
    paymentId,
    state,
    amountMinor: integerAt(object, 'amount') ?? integerAt(object, 'amount_total'),
    currency: stringAt(object, 'currency')?.toUpperCase() ?? null,
    email: stringAt(object, 'receipt_email') ?? stringAt(object, 'billing_details', 'email') ?? stringAt(object, 'customer_details', 'email') ?? stringAt(object, 'customer_email'),
    metadata: metadataOf(path(object, 'metadata')),
  };
};

/** The event types stateOf gives a meaning: the types reconciliation asks Stripe's API for. */
export const STRIPE_PAYMENT_EVENT_TYPES = [
  'payment_intent.created',
  'payment_intent.processing',
  'payment_intent.amount_capturable_updated',
  'payment_intent.succeeded',
  'payment_intent.payment_failed',
  'payment_intent.canceled',
  'charge.succeeded',
  'charge.captured',
  'charge.failed',
  'charge.refunded',
  'checkout.session.completed',
  'checkout.session.async_payment_succeeded',
  'checkout.session.async_payment_failed',
] as const;

function stateOf(eventType: string, object: Record<string, unknown>): PaymentState | CanonicalEvent {
  switch (eventType) {
    case 'payment_intent.created':
    case 'payment_intent.processing':
      return 'created';
    case 'payment_intent.amount_capturable_updated':
      return 'authorized';
    case 'payment_intent.succeeded':
    case 'charge.captured':
    case 'checkout.session.async_payment_succeeded':
      return 'captured';
    case 'payment_intent.payment_failed':
    case 'payment_intent.canceled':
    case 'charge.failed':
    case 'checkout.session.async_payment_failed':
      return 'failed';
    case 'charge.succeeded':
      // A charge with manual capture succeeds as an authorisation first.
      return object.captured === false ? 'authorized' : 'captured';
    case 'charge.refunded':
      return object.refunded === true ? 'refunded' : ignored('partial refund: payment state unchanged');
    case 'checkout.session.completed':
      return object.payment_status === 'paid' ? 'captured' : ignored('checkout completed but not paid yet');
    default:
      return ignored(`no business meaning: stripe ${eventType}`);
  }
}
