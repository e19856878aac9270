import { ignored, metadataOf, type PaymentState } from '../../model/payment-event.js';
import { integerAt, path, stringAt } from '../payload.js';
import { isRecord } from '../../model/json.js';
import type { Normalizer } from '../provider.js';

const STATES: Record<string, PaymentState> = {
  'payment.authorized': 'authorized',
  'payment.captured': 'captured',
  'payment.failed': 'failed',
  'order.paid': 'captured',
  'refund.processed': 'refunded',
};

/** Razorpay events -> payment states, read from the payment entity every payment event carries. */
export const razorpayToCanonical: Normalizer = ({ eventType, payload }) => {
  const state = STATES[eventType];
  if (state === undefined) return ignored(`no business meaning: razorpay ${eventType}`);
  const payment = path(payload, 'payload', 'payment', 'entity');
  if (!isRecord(payment)) return ignored(`razorpay ${eventType} carries no payment entity`);
  const paymentId = stringAt(payment, 'id') ?? stringAt(payload, 'payload', 'refund', 'entity', 'payment_id');
  if (paymentId === null) return ignored(`razorpay ${eventType} carries no payment id`);

  const amount = integerAt(payment, 'amount');
  if (state === 'refunded' && !(amount !== null && (integerAt(payment, 'amount_refunded') ?? 0) >= amount)) {
    return ignored('partial refund: payment state unchanged');
  }
  return {
    kind: 'payment',
    paymentId,
    state,
    amountMinor: amount,
    currency: stringAt(payment, 'currency')?.toUpperCase() ?? null,
    email: stringAt(payment, 'email'),
    // notes is an object when filled and [] when empty.
    metadata: metadataOf(path(payment, 'notes')),
  };
};
