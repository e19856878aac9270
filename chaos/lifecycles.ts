import { PAYMENT_STATE_ORDER, type PaymentState } from '../src/domain/payment-event.js';
import { payuDelivery, razorpayDelivery, razorpayPaymentEvent, stripeDelivery, stripePaymentEvent, type SignedDelivery } from '../test/support/signing.js';
import type { Random } from './random.js';

export type Provider = 'stripe' | 'razorpay' | 'payu';

/** One event as a provider would send it: its id, what it says about the payment, and how to sign it. */
export interface SimulatedEvent {
  provider: Provider;
  /** The id the receiver keys the event by (PayU: mihpayid:status). */
  eventId: string;
  type: string;
  paymentId: string;
  /** The state this event reports, by the provider's documentation (the oracle for the fold). */
  state: PaymentState;
  /** A new signature at each call: Stripe signs every retry with a fresh timestamp. */
  sign: () => SignedDelivery;
}

export interface SimulatedPayment {
  provider: Provider;
  paymentId: string;
  userId: string;
  courseId: string;
  events: SimulatedEvent[];
}

export const COURSE_ID = 'c_chaos';

/** The forward-only fold: the highest state any of the events reported. */
export function foldStates(states: readonly PaymentState[]): PaymentState {
  return states.reduce((highest, state) => (PAYMENT_STATE_ORDER.indexOf(state) > PAYMENT_STATE_ORDER.indexOf(highest) ? state : highest));
}

const STRIPE_STATES: Record<string, PaymentState> = {
  'payment_intent.created': 'created',
  'payment_intent.payment_failed': 'failed',
  'payment_intent.amount_capturable_updated': 'authorized',
  'payment_intent.succeeded': 'captured',
  'charge.succeeded': 'captured',
  'charge.refunded': 'refunded',
};

const RAZORPAY_STATES: Record<string, PaymentState> = {
  'payment.failed': 'failed',
  'payment.authorized': 'authorized',
  'payment.captured': 'captured',
  'refund.processed': 'refunded',
};

const PAYU_STATES: Record<string, PaymentState> = { pending: 'created', failure: 'failed', success: 'captured' };

/**
 * Lifecycles as the providers report them (a share failed, a share refunded), one payment and one
 * user each. The caller shuffles the events: the providers do not promise any order.
 */
export function simulatedPayment(random: Random, run: string, n: number): SimulatedPayment {
  const userId = `u_${run}_${n}`;
  const roll = random.next();
  if (roll < 0.4) return stripePayment(random, `pi_${run}_${n}`, userId);
  if (roll < 0.75) return razorpayPayment(random, `pay_${run}_${n}`, userId);
  return payuPayment(random, `${run}${String(n).padStart(7, '0')}`, userId);
}

function stripePayment(random: Random, paymentId: string, userId: string): SimulatedPayment {
  const roll = random.next();
  const types = roll < 0.1
    ? ['payment_intent.created', 'payment_intent.payment_failed']
    : [
        'payment_intent.created',
        ...(roll < 0.3 ? ['payment_intent.amount_capturable_updated'] : []),
        'payment_intent.succeeded',
        'charge.succeeded',
        ...(random.chance(0.25) ? ['charge.refunded'] : []),
      ];
  const events = types.map((type): SimulatedEvent => {
    const eventId = `evt_${paymentId}_${type}`;
    const event = stripePaymentEvent(eventId, type, paymentId, { userId, courseId: COURSE_ID });
    return { provider: 'stripe', eventId, type, paymentId, state: STRIPE_STATES[type]!, sign: () => stripeDelivery(event) };
  });
  return { provider: 'stripe', paymentId, userId, courseId: COURSE_ID, events };
}

function razorpayPayment(random: Random, paymentId: string, userId: string): SimulatedPayment {
  const types = random.chance(0.1) ? ['payment.failed'] : ['payment.authorized', 'payment.captured', ...(random.chance(0.25) ? ['refund.processed'] : [])];
  const events = types.map((type): SimulatedEvent => {
    const eventId = `evt_${paymentId}_${type}`;
    const body = JSON.stringify(razorpayPaymentEvent(type, paymentId, { userId, courseId: COURSE_ID }));
    return { provider: 'razorpay', eventId, type, paymentId, state: RAZORPAY_STATES[type]!, sign: () => razorpayDelivery(body, eventId) };
  });
  return { provider: 'razorpay', paymentId, userId, courseId: COURSE_ID, events };
}

function payuPayment(random: Random, mihpayid: string, userId: string): SimulatedPayment {
  const roll = random.next();
  const statuses = roll < 0.5 ? ['pending', 'success'] : roll < 0.8 ? ['success'] : ['pending', 'failure'];
  const events = statuses.map((status): SimulatedEvent => {
    const delivery = payuDelivery({
      txnid: `txn_${mihpayid}`,
      mihpayid,
      status,
      amount: '1499.00',
      productinfo: 'course',
      firstname: 'Asha',
      email: 'asha@example.com',
      udf1: userId,
      udf2: COURSE_ID,
    });
    return { provider: 'payu', eventId: `${mihpayid}:${status}`, type: `payment.${status}`, paymentId: mihpayid, state: PAYU_STATES[status]!, sign: () => delivery };
  });
  return { provider: 'payu', paymentId: mihpayid, userId, courseId: COURSE_ID, events };
}
