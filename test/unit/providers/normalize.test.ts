import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { PAYMENT_STATE_ORDER, statesBefore, type CanonicalEvent, type PaymentEvent, type PaymentState } from '../../../src/model/payment-event.js';
import { payuToCanonical } from '../../../src/providers/payu/normalize.js';
import { razorpayToCanonical } from '../../../src/providers/razorpay/normalize.js';
import { stripeToCanonical } from '../../../src/providers/stripe/normalize.js';
import { payload, payloadJson } from '../../support/fixtures.js';

type Json = Record<string, unknown>;

/** A deep copy of `base` with `changes` merged into the object found at `at` (e.g. ['data', 'object']). */
function withChanges(base: Json, at: string[], changes: Json): Json {
  const copy = structuredClone(base);
  let target: unknown = copy;
  for (const key of at) target = (target as Json)[key];
  assert.ok(typeof target === 'object' && target !== null, `${at.join('.')} exists`);
  Object.assign(target, changes);
  return copy;
}

function assertIgnored(event: CanonicalEvent, reason?: RegExp): void {
  assert.equal(event.kind, 'ignored', `expected ignored, got ${JSON.stringify(event)}`);
  if (reason && event.kind === 'ignored') assert.match(event.reason, reason);
}

// ---------------------------------------------------------------------------------------------------
// Stripe: event type from the body's `type`.

const PI = 'pi_3QxA1bB7WZ01zgkW0aBcDeFg';
/** Every constructed Stripe sample is about one 20.00 USD PaymentIntent; metadata is {order_id, tenant}. */
const STRIPE_PAYMENT: Omit<PaymentEvent, 'state'> = {
  kind: 'payment',
  paymentId: PI,
  amountMinor: 2000,
  currency: 'USD',
  email: null,
  metadata: { order_id: 'ord_000123', tenant: 'acme-in' },
};

function stripe(file: string): { eventType: string; payload: Json } {
  const body = payloadJson('stripe', file);
  assert.equal(typeof body.type, 'string');
  return { eventType: body.type as string, payload: body };
}

describe('stripeToCanonical over the sample events', () => {
  for (const { file, expected } of [
    { file: 'payment_intent.created.json', expected: { state: 'created' } },
    { file: 'payment_intent.succeeded.json', expected: { state: 'captured' } },
    { file: 'payment_intent.payment_failed.json', expected: { state: 'failed' } },
    { file: 'charge.succeeded.json', expected: { state: 'captured' } },
    { file: 'charge.refunded.json', expected: { state: 'refunded' } },
    { file: 'checkout.session.completed.json', expected: { state: 'captured', email: 'jenny.rosen@example.com' } },
    { file: 'charge.dispute.created.json', expected: null },
  ] satisfies Array<{ file: string; expected: (Partial<PaymentEvent> & { state: PaymentState }) | null }>) {
    test(`${file} -> ${expected?.state ?? 'ignored'}`, () => {
      const event = stripe(file);
      assert.equal(`${event.eventType}.json`, file, 'the file holds the event type it is named after');
      const canonical = stripeToCanonical(event);
      if (expected === null) assertIgnored(canonical);
      else assert.deepEqual(canonical, { ...STRIPE_PAYMENT, ...expected });
    });
  }
});

describe('stripeToCanonical: variations', () => {
  test('user_id / course_id stay in data.object.metadata, for a domain to read', () => {
    const event = stripe('payment_intent.succeeded.json');
    const canonical = stripeToCanonical({
      ...event,
      payload: withChanges(event.payload, ['data', 'object'], { metadata: { user_id: 'user_42', course_id: 'course_7' } }),
    });
    assert.deepEqual(canonical, { ...STRIPE_PAYMENT, state: 'captured', metadata: { user_id: 'user_42', course_id: 'course_7' } });
  });

  test('the whole metadata object is carried: text as sent, numbers and booleans as text, nested values left out', () => {
    const event = stripe('payment_intent.succeeded.json');
    const metadata = { plan: 'pro', seats: 3, trial: false, ' spaced key ': '  kept as sent ', nested: { no: 'objects' }, list: ['no'] };
    const canonical = stripeToCanonical({ ...event, payload: withChanges(event.payload, ['data', 'object'], { metadata }) });
    assert.deepEqual(canonical.kind === 'payment' && canonical.metadata, { plan: 'pro', seats: '3', trial: 'false', ' spaced key ': '  kept as sent ' });
  });

  for (const { name, file, changes, expected } of [
    { name: 'charge.succeeded with captured:false -> authorized', file: 'charge.succeeded.json', changes: { captured: false }, expected: 'authorized' },
    { name: 'charge.refunded with refunded:false (partial refund) -> ignored', file: 'charge.refunded.json', changes: { refunded: false }, expected: null },
    { name: 'checkout.session.completed not paid yet -> ignored', file: 'checkout.session.completed.json', changes: { payment_status: 'unpaid' }, expected: null },
  ] as const) {
    test(name, () => {
      const event = stripe(file);
      const canonical = stripeToCanonical({ ...event, payload: withChanges(event.payload, ['data', 'object'], changes) });
      if (expected === null) assertIgnored(canonical);
      else assert.equal(canonical.kind === 'payment' && canonical.state, expected);
    });
  }
});

// ---------------------------------------------------------------------------------------------------
// Razorpay: the verbatim docs samples; event type from the body's `event`.

function razorpay(file: string): { eventType: string; payload: Json } {
  const body = payloadJson('razorpay', file);
  assert.equal(typeof body.event, 'string');
  return { eventType: body.event as string, payload: body };
}

/** The docs samples are 1.00 INR payments by gaurav.kumar@example.com with empty notes ([]). */
function razorpayPayment(paymentId: string, state: PaymentState): PaymentEvent {
  return { kind: 'payment', paymentId, state, amountMinor: 100, currency: 'INR', email: 'gaurav.kumar@example.com', metadata: {} };
}

describe('razorpayToCanonical over the docs samples', () => {
  for (const { file, expected } of [
    { file: 'payment.authorized.card.docs-verbatim.json', expected: razorpayPayment('pay_DESp9bgForNoUd', 'authorized') },
    { file: 'payment.authorized.netbanking.docs-verbatim.json', expected: razorpayPayment('pay_DESlfW9H8K9uqM', 'authorized') },
    { file: 'payment.captured.card.docs-verbatim.json', expected: razorpayPayment('pay_DESp9bgForNoUd', 'captured') },
    { file: 'payment.captured.upi.docs-verbatim.json', expected: razorpayPayment('pay_DESyzxuld02Zul', 'captured') },
    { file: 'payment.failed.card.docs-verbatim.json', expected: razorpayPayment('pay_DESp9bgForNoUd', 'failed') },
    { file: 'payment.failed.upi.docs-verbatim.json', expected: razorpayPayment('pay_DESyzxuld02Zul', 'failed') },
    { file: 'order.paid.card.docs-verbatim.json', expected: razorpayPayment('pay_DESp9bgForNoUd', 'captured') },
    { file: 'order.paid.netbanking.docs-verbatim.json', expected: razorpayPayment('pay_DESlfW9H8K9uqM', 'captured') },
    // amount_refunded 190000 < amount 500000: a partial refund leaves the payment as it is.
    { file: 'refund.processed.normal_refunds.docs-verbatim.json', expected: /partial refund/ },
    { file: 'refund.created.normal_refunds.docs-verbatim.json', expected: /no business meaning/ },
    { file: 'refund.failed.normal_refunds.docs-verbatim.json', expected: /no business meaning/ },
    { file: 'payment.dispute.created.payment_dispute_created.docs-verbatim.json', expected: /no business meaning/ },
  ]) {
    test(`${file} -> ${expected instanceof RegExp ? 'ignored' : expected.state}`, () => {
      const event = razorpay(file);
      assert.ok(file.startsWith(`${event.eventType}.`), 'the file holds the event type it is named after');
      const canonical = razorpayToCanonical(event);
      if (expected instanceof RegExp) assertIgnored(canonical, expected);
      else assert.deepEqual(canonical, expected);
    });
  }
});

describe('razorpayToCanonical: variations', () => {
  const PAYMENT_ENTITY = ['payload', 'payment', 'entity'];

  for (const { name, notes } of [
    { name: 'notes with user_id / course_id', notes: { user_id: 'user_42', course_id: 'course_7' } },
    { name: 'notes empty as [] (as the webhook samples show)', notes: [] },
    { name: 'notes empty as {}', notes: {} },
  ]) {
    test(`payment.entity.notes is the metadata: ${name}`, () => {
      const event = razorpay('payment.captured.card.docs-verbatim.json');
      const canonical = razorpayToCanonical({ ...event, payload: withChanges(event.payload, PAYMENT_ENTITY, { notes }) });
      assert.equal(canonical.kind, 'payment');
      assert.deepEqual(canonical.kind === 'payment' && canonical.metadata, Array.isArray(notes) ? {} : notes, 'the notes, whole');
    });
  }

  test('refund.processed that refunds the whole amount -> refunded', () => {
    const event = razorpay('refund.processed.normal_refunds.docs-verbatim.json');
    const canonical = razorpayToCanonical({ ...event, payload: withChanges(event.payload, PAYMENT_ENTITY, { amount_refunded: 500000 }) });
    assert.equal(canonical.kind === 'payment' && canonical.state, 'refunded');
    assert.equal(canonical.kind === 'payment' && canonical.paymentId, 'pay_FPoJKWQQ8lK13n');
  });
});

// ---------------------------------------------------------------------------------------------------
// PayU: event type `payment.${status}`, payload = the URL-decoded fields.

describe('payuToCanonical', () => {
  const decoded = payloadJson('payu', 'payment_success.decoded.json');
  const failure = Object.fromEntries(new URLSearchParams(payload('payu', 'payment_failure.form-urlencoded.txt').toString('utf8')));

  test('success sample -> payment txnid captured 1500.00 INR, its udf fields in the metadata', () => {
    assert.deepEqual(payuToCanonical({ eventType: 'payment.success', payload: decoded }), {
      kind: 'payment',
      paymentId: 'ORD000123A1',
      state: 'captured',
      amountMinor: 150000,
      currency: 'INR',
      email: 'rahul.sharma+test@example.com',
      metadata: { udf1: 'ord_000123', udf2: 'tenant:acme-in', udf5: 'v1' },
    });
  });

  const cases: Array<{ name: string; fields: Json; state: PaymentState }> = [
    { name: 'failure sample (status failure)', fields: failure, state: 'failed' },
    // unmappedstatus is not hashed: it never decides (see the next test).
    { name: "status success with unmappedstatus 'auth'", fields: { ...decoded, unmappedstatus: 'auth' }, state: 'captured' },
    { name: 'status pending', fields: { ...decoded, status: 'pending', unmappedstatus: 'pending' }, state: 'created' },
  ];
  for (const { name, fields, state } of cases) {
    test(`${name} -> ${state}`, () => {
      const canonical = payuToCanonical({ eventType: `payment.${String(fields.status)}`, payload: fields });
      assert.equal(canonical.kind === 'payment' && canonical.state, state);
    });
  }

  test('the payment and its state come from hashed fields only: unhashed ones (mihpayid, unmappedstatus, ...) change nothing', () => {
    const canonical = payuToCanonical({ eventType: 'payment.success', payload: decoded });
    for (const changed of [{ mihpayid: '403993715599999999' }, { unmappedstatus: 'auth' }, { unmappedstatus: 'userCancelled' }, { net_amount_debit: '1.00' }]) {
      assert.deepEqual(payuToCanonical({ eventType: 'payment.success', payload: { ...decoded, ...changed } }), canonical, JSON.stringify(changed));
    }
  });

  test('a stored callback without txnid -> ignored, never a payment with an empty id', () => {
    const { txnid: _omitted, ...withoutId } = decoded;
    assertIgnored(payuToCanonical({ eventType: 'payment.success', payload: withoutId }), /no txnid/);
  });

  test('an unknown status -> ignored', () => {
    assertIgnored(payuToCanonical({ eventType: 'payment.refund', payload: { ...decoded, status: 'refund' } }), /no business meaning/);
  });
});

// ---------------------------------------------------------------------------------------------------

describe('payment state order', () => {
  test('PAYMENT_STATE_ORDER is created < failed < authorized < captured < refunded', () => {
    assert.deepEqual(PAYMENT_STATE_ORDER, ['created', 'failed', 'authorized', 'captured', 'refunded']);
  });

  for (const [target, before] of [
    ['created', []],
    ['failed', ['created']],
    ['authorized', ['created', 'failed']],
    ['captured', ['created', 'failed', 'authorized']],
    ['refunded', ['created', 'failed', 'authorized', 'captured']],
  ] as const) {
    test(`statesBefore('${target}') = [${before.join(', ')}]`, () => {
      assert.deepEqual(statesBefore(target), before);
    });
  }
});
