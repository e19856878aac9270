import { PAYMENT_STATE_ORDER, type PaymentState } from '../src/model/payment-event.js';
import { loadConfig } from '../src/config/load.js';
import { simulateEvent } from '../src/ops/simulator/simulated-events.js';
import { signEvent, type SignedDelivery } from '../src/ops/simulator/sign.js';
import { TEST_SECRETS } from '../test/support/signing.js';
import type { Random } from './random.js';

export type Provider = 'stripe' | 'razorpay' | 'payu';

/** One event as a provider would send it: its id, what it says about the payment, and how to sign it. */
export interface SimulatedEvent {
  provider: Provider;
  /** The id the receiver keys the event by (PayU: txnid:status). */
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

const STATES: Record<Provider, Record<string, PaymentState>> = { stripe: STRIPE_STATES, razorpay: RAZORPAY_STATES, payu: PAYU_STATES };

/** The receivers' secrets (test/support/signing.ts), as the simulator reads them from a config. */
const SIGNING_SETTINGS = loadConfig({
  STRIPE_WEBHOOK_SECRET: TEST_SECRETS.stripe,
  RAZORPAY_WEBHOOK_SECRET: TEST_SECRETS.razorpay,
  PAYU_MERCHANT_KEY: TEST_SECRETS.payuKey,
  PAYU_MERCHANT_SALT: TEST_SECRETS.payuSalt,
}).providers;

/**
 * Lifecycles as the providers report them (a share failed, a share refunded), one payment and one
 * user each. The caller shuffles the events: the providers do not promise any order.
 */
export function simulatedPayment(random: Random, run: string, n: number): SimulatedPayment {
  const userId = `u_${run}_${n}`;
  const roll = random.next();
  if (roll < 0.4) return payment('stripe', `pi_${run}_${n}`, userId, stripeTypes(random));
  if (roll < 0.75)
    return payment(
      'razorpay',
      `pay_${run}_${n}`,
      userId,
      random.chance(0.1) ? ['payment.failed'] : ['payment.authorized', 'payment.captured', ...(random.chance(0.25) ? ['refund.processed'] : [])],
    );
  const payu = random.next();
  return payment('payu', `${run}${String(n).padStart(7, '0')}`, userId, payu < 0.5 ? ['pending', 'success'] : payu < 0.8 ? ['success'] : ['pending', 'failure']);
}

function stripeTypes(random: Random): string[] {
  const roll = random.next();
  if (roll < 0.1) return ['payment_intent.created', 'payment_intent.payment_failed'];
  return [
    'payment_intent.created',
    ...(roll < 0.3 ? ['payment_intent.amount_capturable_updated'] : []),
    'payment_intent.succeeded',
    'charge.succeeded',
    ...(random.chance(0.25) ? ['charge.refunded'] : []),
  ];
}

/** The provider's events for one payment, built and signed by the project's simulator (src/ops). */
function payment(provider: Provider, paymentId: string, userId: string, types: string[]): SimulatedPayment {
  const events = types.map((type): SimulatedEvent => {
    const event = simulateEvent(provider, type, { paymentId, userId, courseId: COURSE_ID });
    return {
      provider,
      eventId: event.eventId,
      type,
      paymentId,
      state: STATES[provider][type]!,
      sign: () => signEvent(event, SIGNING_SETTINGS, { now: new Date() }),
    };
  });
  return { provider, paymentId, userId, courseId: COURSE_ID, events };
}
