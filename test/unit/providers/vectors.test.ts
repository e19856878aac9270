import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { describe, test } from 'node:test';
import { BadRequestError, SignatureError } from '../../../src/errors.js';
import { createPayuVerifier, payuReverseHash } from '../../../src/providers/payu/verify.js';
import type { Verifier } from '../../../src/providers/provider.js';
import type { RawDelivery, VerifiedEvent } from '../../../src/model/delivery.js';
import { createRazorpayVerifier } from '../../../src/providers/razorpay/verify.js';
import { createStripeVerifier } from '../../../src/providers/stripe/verify.js';
import { loadVectors, nodeHeaders, vectorBody, type SignatureVector } from '../../support/fixtures.js';

/**
 * The signature vectors (test/fixtures/providers/vectors.json): `expectedValid` is the official SDK's
 * verdict (stripe-node, razorpay-node, payu-websdk). Our verifiers must agree with it, except where
 * noted below.
 */
const vectors = loadVectors();

/**
 * Official Razorpay SDK vectors whose signature is right but which carry no X-Razorpay-Event-Id header:
 * the signature is accepted, then the receiver answers 400 because it has nothing to deduplicate on.
 */
const ACCEPTED_WITHOUT_EVENT_ID = new Set(['razorpay/official_sdk_unit_test_vector', 'razorpay/official_sdk_docs_example']);

/**
 * Documented policy deviation: payu-websdk ignores the posted `key` and accepts this vector; our
 * receiver also requires the posted key to equal PAYU_MERCHANT_KEY.
 */
const POSTED_KEY_DEVIATION = 'payu/body_key_differs_from_configured_key';

/**
 * The vectors give PayU's idempotency key as mihpayid:status. The receiver keys PayU callbacks by
 * txnid:status: mihpayid is not covered by the hash (see docs/how-it-works.md, PayU).
 */
function expectedEventId(vector: SignatureVector): string | null {
  if (vector.provider !== 'payu' || vector.idempotencyKey === null) return vector.idempotencyKey;
  const fields = new URLSearchParams(vectorBody(vector).toString('utf8'));
  return `${fields.get('txnid')!.trim()}:${fields.get('status')!.trim().toLowerCase()}`;
}

type Outcome = { kind: 'accepted'; event: VerifiedEvent } | { kind: 'accepted_without_event_id'; error: BadRequestError } | { kind: 'rejected'; error: SignatureError };

/** Runs a verifier; any error other than a signature verdict or a missing event id fails the test. */
function outcomeOf(verifier: Verifier, delivery: RawDelivery): Outcome {
  try {
    return { kind: 'accepted', event: verifier.verify(delivery) };
  } catch (error) {
    if (error instanceof SignatureError) return { kind: 'rejected', error };
    if (error instanceof BadRequestError && error.code === 'missing_event_id') return { kind: 'accepted_without_event_id', error };
    throw error;
  }
}

function verifierFor(vector: SignatureVector): Verifier {
  switch (vector.provider) {
    case 'stripe':
      return createStripeVerifier({ secrets: vector.secrets ?? [vector.secret], toleranceSeconds: vector.toleranceSeconds });
    case 'razorpay':
      return createRazorpayVerifier({ secrets: [vector.secret] });
    case 'payu':
      return createPayuVerifier({ merchantKey: vector.key, merchantSalt: vector.salt });
  }
}

function deliveryFor(vector: SignatureVector): RawDelivery {
  const receivedAt = vector.provider === 'stripe' ? new Date(vector.now * 1000) : new Date();
  return { headers: nodeHeaders(vector.headers), body: vectorBody(vector), receivedAt };
}

function describeOutcome(outcome: Outcome): string {
  return outcome.kind === 'accepted' ? 'accepted' : `${outcome.kind}: ${outcome.error.message}`;
}

describe('signature vectors (official SDK verdicts)', () => {
  test('the vectors file holds all 37 vectors (stripe 16, razorpay 10, payu 11)', () => {
    const count = (provider: string) => vectors.filter((v) => v.provider === provider).length;
    assert.equal(vectors.length, 37);
    assert.deepEqual({ stripe: count('stripe'), razorpay: count('razorpay'), payu: count('payu') }, { stripe: 16, razorpay: 10, payu: 11 });
    const names = new Set(vectors.map((v) => `${v.provider}/${v.name}`));
    assert.equal(names.size, 37, 'vector names are unique');
    for (const special of [...ACCEPTED_WITHOUT_EVENT_ID, POSTED_KEY_DEVIATION]) assert.ok(names.has(special), `${special} is in the file`);
  });

  for (const vector of vectors) {
    const id = `${vector.provider}/${vector.name}`;
    if (id === POSTED_KEY_DEVIATION) continue;

    test(id, () => {
      const outcome = outcomeOf(verifierFor(vector), deliveryFor(vector));
      assert.equal(outcome.kind !== 'rejected', vector.expectedValid, `SDK says valid=${vector.expectedValid}, we got ${describeOutcome(outcome)}`);

      if (ACCEPTED_WITHOUT_EVENT_ID.has(id)) {
        assert.equal(outcome.kind, 'accepted_without_event_id', describeOutcome(outcome));
        assert.equal(outcome.error.statusCode, 400);
      } else if (vector.expectedValid) {
        assert.equal(outcome.kind, 'accepted', describeOutcome(outcome));
        if (vector.idempotencyKey !== null) assert.equal(outcome.event.eventId, expectedEventId(vector));
      }
    });
  }

  test(`${POSTED_KEY_DEVIATION} (policy: the posted key must equal PAYU_MERCHANT_KEY)`, () => {
    const vector = vectors.find((v) => `${v.provider}/${v.name}` === POSTED_KEY_DEVIATION);
    assert.ok(vector?.provider === 'payu');
    assert.equal(vector.expectedValid, true, 'the SDK accepts it');

    const fields = Object.fromEntries(new URLSearchParams(vectorBody(vector).toString('utf8')));
    assert.notEqual(fields.key, vector.key, 'the body names another merchant key');
    // (a) The SDK's verdict on the hash itself holds: it is computed with the configured key and salt.
    assert.equal(payuReverseHash(fields, vector.salt, vector.key), fields.hash);
    // (b) ... but our receiver refuses a callback that names another merchant.
    const outcome = outcomeOf(verifierFor(vector), deliveryFor(vector));
    assert.equal(outcome.kind, 'rejected');
    assert.match(outcome.error.message, /PAYU_MERCHANT_KEY/);
  });
});

describe('stripe verifier beyond the vectors', () => {
  const NOW = 1_767_225_600;
  const SECRET = 'whsec_unit_primary_0123456789abcdef';
  const OTHER_SECRET = 'whsec_unit_other_fedcba9876543210';
  const EVENT = Buffer.from(JSON.stringify({ id: 'evt_unit_1', object: 'event', type: 'payment_intent.succeeded', data: { object: {} } }));

  /** v1 = hex(HMAC-SHA256(secret, `${t}.` + raw body bytes)), written independently of src/. */
  function v1(secret: string, t: number, body: Buffer): string {
    return createHmac('sha256', secret).update(`${t}.`).update(body).digest('hex');
  }

  function verify(options: { secrets?: string[]; toleranceSeconds?: number; header: string; body?: Buffer }): VerifiedEvent {
    const verifier = createStripeVerifier({ secrets: options.secrets ?? [SECRET], toleranceSeconds: options.toleranceSeconds ?? 300 });
    return verifier.verify({
      headers: { 'content-type': 'application/json', 'stripe-signature': options.header },
      body: options.body ?? EVENT,
      receivedAt: new Date(NOW * 1000),
    });
  }

  test('several configured secrets: a signature made with the second one is accepted', () => {
    const secrets = [OTHER_SECRET, SECRET];
    assert.equal(verify({ secrets, header: `t=${NOW},v1=${v1(SECRET, NOW, EVENT)}` }).eventId, 'evt_unit_1');
    assert.throws(() => verify({ secrets, header: `t=${NOW},v1=${v1('whsec_not_configured', NOW, EVENT)}` }), SignatureError);
  });

  for (const { age, accepted } of [
    { age: 60, accepted: true },
    { age: 61, accepted: false },
  ]) {
    test(`custom tolerance 60 s: a signature ${age} s old is ${accepted ? 'accepted' : 'rejected'}`, () => {
      const t = NOW - age;
      const run = () => verify({ toleranceSeconds: 60, header: `t=${t},v1=${v1(SECRET, t, EVENT)}` });
      if (accepted) assert.equal(run().eventId, 'evt_unit_1');
      else assert.throws(run, SignatureError);
    });
  }

  for (const { name, header, accepted } of [
    { name: 'stale then fresh: the fresh (last) t is used', header: `t=${NOW - 3600},t=${NOW},v1=${v1(SECRET, NOW, EVENT)}`, accepted: true },
    { name: 'fresh then other: the last t is used, so the signature no longer matches', header: `t=${NOW},t=${NOW - 1},v1=${v1(SECRET, NOW, EVENT)}`, accepted: false },
  ]) {
    test(`header with t twice, last wins like stripe-node (${name})`, () => {
      if (accepted) assert.equal(verify({ header }).eventId, 'evt_unit_1');
      else assert.throws(() => verify({ header }), SignatureError);
    });
  }

  for (const { name, body, code, message } of [
    { name: 'body is not JSON', body: Buffer.from('not json at all'), code: 'malformed_body', message: /JSON/ },
    { name: 'body is a JSON array, not an object', body: Buffer.from('[{"id":"evt_1"}]'), code: 'malformed_body', message: /object/ },
    { name: 'event has no id', body: Buffer.from('{"object":"event","type":"charge.succeeded"}'), code: 'missing_event_id', message: /event id/ },
    { name: 'body bytes are not valid UTF-8', body: Buffer.from([0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]), code: 'malformed_body', message: /UTF-8/ },
  ]) {
    test(`signature OK but ${name} -> 400 ${code}`, () => {
      assert.throws(
        () => verify({ body, header: `t=${NOW},v1=${v1(SECRET, NOW, body)}` }),
        (error: unknown) => error instanceof BadRequestError && error.code === code && error.statusCode === 400 && message.test(error.message),
      );
    });
  }
});

describe('razorpay verifier beyond the vectors', () => {
  const NEW_SECRET = 'rzp_unit_new_secret';
  const OLD_SECRET = 'rzp_unit_old_secret';
  const BODY = Buffer.from(JSON.stringify({ entity: 'event', event: 'payment.captured', payload: {} }));
  const verifier = createRazorpayVerifier({ secrets: [NEW_SECRET, OLD_SECRET] });

  function sign(secret: string, body: Buffer): string {
    return createHmac('sha256', secret).update(body).digest('hex');
  }

  function verify(signature: string, body: Buffer = BODY): VerifiedEvent {
    return verifier.verify({
      headers: { 'content-type': 'application/json', 'x-razorpay-signature': signature, 'x-razorpay-event-id': 'EvtUnit0000001' },
      body,
      receivedAt: new Date(),
    });
  }

  for (const [label, secret] of [
    ['new', NEW_SECRET],
    ['old', OLD_SECRET],
  ] as const) {
    test(`secret rotation: a delivery signed with the ${label} secret is accepted`, () => {
      const event = verify(sign(secret, BODY));
      assert.equal(event.eventId, 'EvtUnit0000001');
      assert.equal(event.eventType, 'payment.captured');
    });
  }

  test('secret rotation: a delivery signed with neither secret is rejected', () => {
    assert.throws(() => verify(sign('rzp_unit_unknown_secret', BODY)), SignatureError);
  });

  test('an empty X-Razorpay-Signature header is rejected as a signature failure', () => {
    assert.throws(() => verify(''), SignatureError);
  });

  test('signature OK but body not JSON -> 400 malformed_body', () => {
    const body = Buffer.from('event=payment.captured');
    assert.throws(
      () => verify(sign(NEW_SECRET, body), body),
      (error: unknown) => error instanceof BadRequestError && error.statusCode === 400 && error.code === 'malformed_body',
    );
  });
});
