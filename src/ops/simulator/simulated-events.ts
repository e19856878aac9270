import { randomBytes, randomInt } from 'node:crypto';
import type { ProviderName } from '../../model/delivery.js';
import { STRIPE_PAYMENT_EVENT_TYPES } from '../../providers/stripe/normalize.js';
import { OperationError } from '../errors.js';

/** The payment a simulated event is about; anything left out is made up. */
export interface SimulatedPayment {
  paymentId?: string;
  userId?: string;
  courseId?: string;
  /** Smallest currency unit (cents, paise). */
  amountMinor?: number;
  email?: string;
}

/** A realistic provider event, not yet signed: JSON for Stripe and Razorpay, form fields for PayU. */
export type SimulatedEvent =
  | { provider: 'stripe'; eventId: string; eventType: string; paymentId: string; json: Record<string, unknown> }
  | { provider: 'razorpay'; eventId: string; eventType: string; paymentId: string; json: Record<string, unknown> }
  | { provider: 'payu'; eventId: string; eventType: string; paymentId: string; fields: Record<string, string> };

type Builder<E extends SimulatedEvent> = (type: string, payment: Required<SimulatedPayment>, now: Date) => E;

/** Every type the domain maps, and a dispute, which it records without a payment state. */
const STRIPE_TYPES = [...STRIPE_PAYMENT_EVENT_TYPES, 'charge.dispute.created'] as const;
const RAZORPAY_TYPES = ['payment.authorized', 'payment.captured', 'payment.failed', 'order.paid', 'refund.created', 'refund.processed', 'payment.dispute.created'] as const;
const PAYU_TYPES = ['success', 'failure', 'pending'] as const;

export const SIMULATED_EVENT_TYPES: Record<ProviderName, readonly string[]> = { stripe: STRIPE_TYPES, razorpay: RAZORPAY_TYPES, payu: PAYU_TYPES };

const ALPHANUMERIC = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** Provider-style random ids: "pi_3Pq..." for Stripe, "pay_Nx..." for Razorpay. */
export function randomId(prefix: string, length = 14): string {
  const bytes = randomBytes(length);
  return `${prefix}${Array.from(bytes, (b) => ALPHANUMERIC[b % ALPHANUMERIC.length]).join('')}`;
}

const unix = (date: Date) => Math.floor(date.getTime() / 1000);

const stripeEvent: Builder<Extract<SimulatedEvent, { provider: 'stripe' }>> = (type, payment, now) => {
  const paymentIntent = payment.paymentId;
  const charge = `ch_${paymentIntent.replace(/^pi_/, '')}`;
  const metadata = { user_id: payment.userId, course_id: payment.courseId };
  const failed = type.endsWith('payment_failed') || type === 'charge.failed';
  const refunded = type === 'charge.refunded';
  const authorizedOnly = type === 'payment_intent.amount_capturable_updated';
  const intentStatus: Record<string, string> = {
    'payment_intent.created': 'requires_payment_method',
    'payment_intent.processing': 'processing',
    'payment_intent.amount_capturable_updated': 'requires_capture',
    'payment_intent.payment_failed': 'requires_payment_method',
    'payment_intent.canceled': 'canceled',
  };
  let object: Record<string, unknown>;
  if (type.startsWith('payment_intent.')) {
    object = {
      id: paymentIntent,
      object: 'payment_intent',
      amount: payment.amountMinor,
      amount_capturable: authorizedOnly ? payment.amountMinor : 0,
      amount_received: type === 'payment_intent.succeeded' ? payment.amountMinor : 0,
      capture_method: authorizedOnly ? 'manual' : 'automatic_async',
      client_secret: `${paymentIntent}_secret_${randomId('', 24)}`,
      created: unix(now) - 5,
      currency: 'usd',
      description: `Course ${payment.courseId}`,
      last_payment_error: failed ? { code: 'card_declined', decline_code: 'insufficient_funds', message: 'Your card has insufficient funds.', type: 'card_error' } : null,
      latest_charge: type === 'payment_intent.created' ? null : charge,
      livemode: false,
      metadata,
      payment_method: type === 'payment_intent.created' ? null : randomId('pm_', 24),
      payment_method_types: ['card'],
      receipt_email: payment.email,
      status: intentStatus[type] ?? 'succeeded',
    };
  } else if (type.startsWith('checkout.session.')) {
    object = {
      id: randomId('cs_test_', 40),
      object: 'checkout.session',
      amount_subtotal: payment.amountMinor,
      amount_total: payment.amountMinor,
      currency: 'usd',
      customer_details: { email: payment.email, name: 'Jenny Rosen' },
      livemode: false,
      metadata,
      mode: 'payment',
      payment_intent: paymentIntent,
      // A delayed method (a bank debit) completes the session unpaid; the async events settle it.
      payment_status: type === 'checkout.session.completed' || type === 'checkout.session.async_payment_succeeded' ? 'paid' : 'unpaid',
      status: 'complete',
    };
  } else if (type === 'charge.dispute.created') {
    object = {
      id: randomId('dp_', 24),
      object: 'dispute',
      amount: payment.amountMinor,
      charge,
      currency: 'usd',
      payment_intent: paymentIntent,
      reason: 'fraudulent',
      status: 'needs_response',
    };
  } else {
    object = {
      id: charge,
      object: 'charge',
      amount: payment.amountMinor,
      amount_captured: failed ? 0 : payment.amountMinor,
      amount_refunded: refunded ? payment.amountMinor : 0,
      billing_details: { email: payment.email, name: 'Jenny Rosen' },
      captured: !failed,
      created: unix(now) - 2,
      currency: 'usd',
      failure_code: failed ? 'card_declined' : null,
      livemode: false,
      metadata,
      paid: !failed,
      payment_intent: paymentIntent,
      receipt_email: payment.email,
      refunded,
      status: failed ? 'failed' : 'succeeded',
    };
  }
  const eventId = randomId('evt_', 24);
  return {
    provider: 'stripe',
    eventId,
    eventType: type,
    paymentId: paymentIntent,
    json: {
      id: eventId,
      object: 'event',
      api_version: '2024-06-20',
      created: unix(now),
      data: { object },
      livemode: false,
      pending_webhooks: 1,
      request: { id: null, idempotency_key: null },
      type,
    },
  };
};

const razorpayEvent: Builder<Extract<SimulatedEvent, { provider: 'razorpay' }>> = (type, payment, now) => {
  const refunded = type === 'refund.processed';
  const failed = type === 'payment.failed';
  const status = failed ? 'failed' : type === 'payment.authorized' ? 'authorized' : refunded ? 'refunded' : 'captured';
  const orderId = randomId('order_');
  const entity = {
    id: payment.paymentId,
    entity: 'payment',
    amount: payment.amountMinor,
    currency: 'INR',
    status,
    order_id: orderId,
    invoice_id: null,
    international: false,
    method: 'upi',
    amount_refunded: refunded ? payment.amountMinor : 0,
    refund_status: refunded ? 'full' : null,
    captured: status === 'captured' || refunded,
    description: `Course ${payment.courseId}`,
    card_id: null,
    bank: null,
    wallet: null,
    vpa: failed ? 'failure@razorpay' : 'success@razorpay',
    email: payment.email,
    contact: '+919876543210',
    notes: { user_id: payment.userId, course_id: payment.courseId },
    fee: failed ? null : Math.round(payment.amountMinor * 0.02),
    tax: failed ? null : Math.round(payment.amountMinor * 0.0036),
    error_code: failed ? 'BAD_REQUEST_ERROR' : null,
    error_description: failed ? 'Payment failed because the UPI app declined it' : null,
    created_at: unix(now) - 10,
  };
  const payload: Record<string, unknown> = { payment: { entity } };
  const contains = ['payment'];
  if (type === 'order.paid') {
    contains.push('order');
    payload.order = {
      entity: {
        id: orderId,
        entity: 'order',
        amount: payment.amountMinor,
        amount_paid: payment.amountMinor,
        amount_due: 0,
        currency: 'INR',
        receipt: `rcpt_${payment.userId}`,
        status: 'paid',
        attempts: 1,
        notes: entity.notes,
        created_at: unix(now) - 60,
      },
    };
  }
  if (type.startsWith('refund.')) {
    contains.unshift('refund');
    payload.refund = {
      entity: {
        id: randomId('rfnd_'),
        entity: 'refund',
        amount: payment.amountMinor,
        currency: 'INR',
        payment_id: payment.paymentId,
        notes: [],
        status: 'processed',
        speed_processed: 'normal',
        created_at: unix(now),
      },
    };
  }
  if (type === 'payment.dispute.created') {
    contains.push('dispute');
    payload.dispute = {
      entity: {
        id: randomId('disp_'),
        entity: 'dispute',
        payment_id: payment.paymentId,
        amount: payment.amountMinor,
        currency: 'INR',
        phase: 'chargeback',
        status: 'open',
        reason_code: 'chargeback_request',
        created_at: unix(now),
      },
    };
  }
  return {
    provider: 'razorpay',
    eventId: randomId(''),
    eventType: type,
    paymentId: payment.paymentId,
    json: { entity: 'event', account_id: 'acc_SimulatedAcct01', event: type, contains, payload, created_at: unix(now) },
  };
};

const payuEvent: Builder<Extract<SimulatedEvent, { provider: 'payu' }>> = (type, payment, now) => {
  const status = type.replace(/^payment\./, '');
  const rupees = (payment.amountMinor / 100).toFixed(2);
  const failed = status === 'failure';
  return {
    provider: 'payu',
    eventId: `${payment.paymentId}:${status}`,
    eventType: `payment.${status}`,
    paymentId: payment.paymentId,
    fields: {
      // PayU's id of this attempt; the payment is the merchant's txnid.
      mihpayid: String(randomInt(10_000_000_000, 99_999_999_999)),
      mode: 'UPI',
      status,
      unmappedstatus: failed ? 'failed' : status === 'pending' ? 'pending' : 'captured',
      txnid: payment.paymentId,
      amount: rupees,
      discount: '0.00',
      net_amount_debit: failed || status === 'pending' ? '0' : rupees,
      addedon: now.toISOString().slice(0, 19).replace('T', ' '),
      productinfo: `Course ${payment.courseId}`,
      firstname: 'Asha',
      lastname: '',
      email: payment.email,
      phone: '9876543210',
      udf1: payment.userId,
      udf2: payment.courseId,
      udf3: '',
      udf4: '',
      udf5: '',
      payment_source: 'payuPureS2S',
      PG_TYPE: 'UPI-PG',
      bank_ref_num: failed ? '' : String(randomInt(100_000_000, 999_999_999)),
      bankcode: 'UPI',
      error: failed ? 'E308' : 'E000',
      error_Message: failed ? 'Transaction declined by the bank' : 'No Error',
    },
  };
};

const BUILDERS = { stripe: stripeEvent, razorpay: razorpayEvent, payu: payuEvent } as const;

const DEFAULT_PAYMENT_ID: Record<ProviderName, () => string> = {
  stripe: () => randomId('pi_', 24),
  razorpay: () => randomId('pay_'),
  payu: () => randomId('txn', 12),
};

/** Builds an event the way the provider would send it for `type`; unknown types list the known ones. */
export function simulateEvent(provider: ProviderName, type: string, payment: SimulatedPayment = {}, now = new Date()): SimulatedEvent {
  const known = SIMULATED_EVENT_TYPES[provider];
  const normalized = provider === 'payu' ? type.replace(/^payment\./, '') : type;
  if (!known.includes(normalized)) throw new OperationError(`unknown ${provider} event type "${type}"; known: ${known.join(', ')}`, 'bad_argument');
  const userId = payment.userId ?? randomId('user_', 6);
  return BUILDERS[provider](
    normalized,
    {
      paymentId: payment.paymentId ?? DEFAULT_PAYMENT_ID[provider](),
      userId,
      courseId: payment.courseId ?? 'course_101',
      amountMinor: payment.amountMinor ?? (provider === 'stripe' ? 4900 : 49_900),
      email: payment.email ?? `${userId}@example.com`,
    },
    now,
  );
}
