import { createHash, createHmac } from 'node:crypto';

/**
 * Signs deliveries the way the providers do, written independently of src/ so the receiver is not
 * tested against its own code.
 */
export const TEST_SECRETS = {
  stripe: 'whsec_test_integration_0123456789abcdef',
  razorpay: 'rzp_test_integration_secret',
  payuKey: 'TstK3y',
  payuSalt: 'TestSalt0123456789abcdefGHIJKLmn',
};

export interface Delivery {
  provider: 'stripe' | 'razorpay' | 'payu';
  headers: Record<string, string>;
  body: string | Buffer;
}

/** What the signers produce: a text body. */
export interface SignedDelivery extends Delivery {
  body: string;
}

export function stripeDelivery(event: object | string, options: { secret?: string; timestamp?: number } = {}): SignedDelivery {
  const body = typeof event === 'string' ? event : JSON.stringify(event);
  const t = options.timestamp ?? Math.floor(Date.now() / 1000);
  const v1 = createHmac('sha256', options.secret ?? TEST_SECRETS.stripe)
    .update(`${t}.${body}`)
    .digest('hex');
  return { provider: 'stripe', headers: { 'content-type': 'application/json', 'stripe-signature': `t=${t},v1=${v1}` }, body };
}

export function razorpayDelivery(event: object | string, eventId: string, options: { secret?: string } = {}): SignedDelivery {
  const body = typeof event === 'string' ? event : JSON.stringify(event);
  const signature = createHmac('sha256', options.secret ?? TEST_SECRETS.razorpay)
    .update(body)
    .digest('hex');
  return {
    provider: 'razorpay',
    headers: { 'content-type': 'application/json', 'x-razorpay-signature': signature, 'x-razorpay-event-id': eventId },
    body,
  };
}

/** The fields of a successful PayU callback for transaction `txnid` (unsigned: see payuDelivery). */
export function payuSuccessFields(txnid: string): Record<string, string> {
  return {
    mihpayid: `m_${txnid}`,
    status: 'success',
    txnid,
    amount: '99.00',
    productinfo: 'Course',
    firstname: 'Asha',
    email: 'asha@example.com',
    udf1: 'u1',
    udf2: 'c1',
  };
}

/** Builds a PayU form post from fields, adding the reverse hash (SALT|status||||||udf5..udf1|...|key). */
export function payuDelivery(fields: Record<string, string>): SignedDelivery {
  const f = (name: string) => fields[name] ?? '';
  const hashed = [
    TEST_SECRETS.payuSalt,
    f('status'),
    '',
    '',
    '',
    '',
    '',
    f('udf5'),
    f('udf4'),
    f('udf3'),
    f('udf2'),
    f('udf1'),
    f('email'),
    f('firstname'),
    f('productinfo'),
    f('amount'),
    f('txnid'),
    TEST_SECRETS.payuKey,
  ];
  if ('additionalCharges' in fields) hashed.unshift(f('additionalCharges'));
  const hash = createHash('sha512').update(hashed.join('|')).digest('hex');
  const body = new URLSearchParams({ key: TEST_SECRETS.payuKey, ...fields, hash }).toString();
  return { provider: 'payu', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body };
}

const RECEIPT_EMAIL = 'buyer@example.com';

/** A Stripe PaymentIntent event for the course platform (metadata user_id / course_id, a receipt address). */
export function stripePaymentEvent(
  eventId: string,
  type: string,
  paymentIntent: string,
  options: { userId?: string; courseId?: string; amount?: number; object?: Record<string, unknown> } = {},
): object {
  const metadata = { user_id: options.userId ?? 'user_1', course_id: options.courseId ?? 'course_1' };
  const isCharge = type.startsWith('charge.');
  const object = isCharge
    ? {
        id: `ch_${paymentIntent}`,
        object: 'charge',
        payment_intent: paymentIntent,
        amount: options.amount ?? 4900,
        currency: 'usd',
        captured: true,
        refunded: type === 'charge.refunded',
        receipt_email: RECEIPT_EMAIL,
        metadata,
      }
    : { id: paymentIntent, object: 'payment_intent', amount: options.amount ?? 4900, currency: 'usd', receipt_email: RECEIPT_EMAIL, metadata };
  return { id: eventId, object: 'event', type, created: Math.floor(Date.now() / 1000), data: { object: { ...object, ...options.object } } };
}
