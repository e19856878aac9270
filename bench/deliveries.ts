import { payload, payloadJson } from '../test/support/fixtures.js';
import { payuDelivery, razorpayDelivery, stripeDelivery, type SignedDelivery } from '../test/support/signing.js';

/** One request of the load: path, headers and the exact bytes a provider would send. */
export interface PooledDelivery {
  path: string;
  headers: Record<string, string>;
  body: Buffer;
}

export interface PoolOptions {
  /** Unique events to generate (duplicates come on top). */
  events: number;
  /** Makes event and payment ids unique per load step, so each step's events are new to the store. */
  prefix: string;
  seed: number;
  /** Share of unique events delivered once more later, byte for byte (a provider retry). */
  duplicateShare?: number;
  /** Share of unique events delivered several times at once (parallel retries of one delivery). */
  burstShare?: number;
  burstCopies?: number;
  /**
   * Forgeries: the same deliveries with one byte more in the body, so every signature is wrong while
   * the request looks real (full size, well-formed headers): the receiver pays a whole HMAC for each.
   */
  forged?: boolean;
}

export interface DeliveryPool {
  deliveries: PooledDelivery[];
  uniqueEvents: number;
  duplicates: number;
}

/** Deterministic random numbers (mulberry32), so every target receives the same sequence. */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

type Template = Record<string, unknown> & { data: { object: Record<string, unknown> } };

const STRIPE = {
  created: payloadJson('stripe', 'payment_intent.created.json') as Template,
  succeeded: payloadJson('stripe', 'payment_intent.succeeded.json') as Template,
  charge: payloadJson('stripe', 'charge.succeeded.json') as Template,
};
const RAZORPAY = {
  authorized: payloadJson('razorpay', 'payment.authorized.card.docs-verbatim.json'),
  captured: payloadJson('razorpay', 'payment.captured.card.docs-verbatim.json'),
};
const PAYU_FIELDS = Object.fromEntries(new URLSearchParams(payload('payu', 'payment_success.form-urlencoded.txt').toString('utf8')));

/** Stripe sends pretty-printed JSON; the bodies keep the size and shape of the samples. */
function stripeEvent(template: Template, eventId: string, paymentIntent: string, user: string, course: string): SignedDelivery {
  // With an address, as Razorpay's and PayU's samples have: every payment of the load has a receipt to send.
  const object: Record<string, unknown> = { ...template.data.object, receipt_email: `${user}@example.com`, metadata: { user_id: user, course_id: course } };
  if (object.object === 'payment_intent') object.id = paymentIntent;
  else object.payment_intent = paymentIntent;
  return stripeDelivery(JSON.stringify({ ...template, id: eventId, data: { ...template.data, object } }, null, 2));
}

function razorpayEvent(template: Record<string, unknown>, eventId: string, paymentId: string, user: string, course: string): SignedDelivery {
  const event = structuredClone(template) as { payload: { payment: { entity: Record<string, unknown> } } };
  Object.assign(event.payload.payment.entity, { id: paymentId, notes: { user_id: user, course_id: course } });
  return razorpayDelivery(JSON.stringify(event, null, 2), eventId);
}

/** The events one payment produces, in the order the provider usually sends them. */
function paymentDeliveries(provider: number, id: string, user: string, course: string): SignedDelivery[] {
  if (provider < 0.5) {
    const pi = `pi_${id}`;
    return [
      stripeEvent(STRIPE.created, `evt_${id}_c`, pi, user, course),
      stripeEvent(STRIPE.succeeded, `evt_${id}_s`, pi, user, course),
      stripeEvent(STRIPE.charge, `evt_${id}_ch`, pi, user, course),
    ];
  }
  if (provider < 0.8) {
    const pay = `pay_${id}`;
    return [razorpayEvent(RAZORPAY.authorized, `rzp_evt_${id}_a`, pay, user, course), razorpayEvent(RAZORPAY.captured, `rzp_evt_${id}_c`, pay, user, course)];
  }
  const { hash: _hash, key: _key, ...fields } = PAYU_FIELDS;
  return [payuDelivery({ ...fields, mihpayid: `mihpay_${id}`, txnid: `txn_${id}`, udf1: user, udf2: course })];
}

function pooled(delivery: SignedDelivery, forged: boolean): PooledDelivery {
  return { path: `/webhooks/${delivery.provider}`, headers: delivery.headers, body: Buffer.from(forged ? `${delivery.body}\n` : delivery.body) };
}

/**
 * A pre-signed sequence of realistic deliveries: Stripe (JSON, three events per payment), Razorpay
 * (JSON, two) and PayU (form posts, one), events of one payment close together, every signature
 * valid. About `duplicateShare` of the events come again later, byte for byte, and `burstShare` come
 * `burstCopies` times in a row, which concurrent connections send at the same moment.
 */
export function buildPool(options: PoolOptions): DeliveryPool {
  const next = random(options.seed);
  const duplicateShare = options.duplicateShare ?? 0.08;
  const burstShare = options.burstShare ?? 0.005;
  const burstCopies = options.burstCopies ?? 4;
  const unique: PooledDelivery[] = [];
  for (let payment = 0; unique.length < options.events; payment++) {
    const id = `${options.prefix}${payment.toString(36)}${Math.floor(next() * 1e9).toString(36)}`;
    const user = `user_${Math.floor(next() * 50_000)}`;
    const course = `course_${Math.floor(next() * 200)}`;
    for (const delivery of paymentDeliveries(next(), id, user, course)) unique.push(pooled(delivery, options.forged === true));
  }
  unique.length = options.events;

  const deliveries: PooledDelivery[] = [];
  const later = new Map<number, PooledDelivery[]>();
  let duplicates = 0;
  unique.forEach((delivery, index) => {
    deliveries.push(delivery);
    const roll = next();
    if (roll < burstShare) {
      for (let copy = 0; copy < burstCopies; copy++) deliveries.push(delivery);
      duplicates += burstCopies;
    } else if (roll < burstShare + duplicateShare) {
      const at = index + 1 + Math.floor(next() * 2000);
      later.set(at, [...(later.get(at) ?? []), delivery]);
      duplicates++;
    }
    for (const retry of later.get(index) ?? []) deliveries.push(retry);
    later.delete(index);
  });
  for (const retries of later.values()) deliveries.push(...retries);
  return { deliveries, uniqueEvents: unique.length, duplicates };
}
