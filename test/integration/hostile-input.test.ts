import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { createTestDatabase, type TestDatabase } from '../support/database.js';
import { Harness, type Response } from '../support/harness.js';
import { payuDelivery, razorpayDelivery, stripeDelivery, stripePaymentEvent, type Delivery } from '../support/signing.js';

/**
 * Property-based hostile input over HTTP: whatever arrives, the answer is the right 4xx, nothing
 * unsigned is written, and the server keeps serving. Input validation does not depend on the store,
 * so one SQLite store keeps this file fast.
 */
const database = (await createTestDatabase('sqlite')) as TestDatabase;
const RUNS = 80;

const SIGNATURE_HEADERS = ['stripe-signature', 'x-razorpay-signature', 'x-razorpay-event-id'] as const;
const CONTENT_TYPES = ['application/json', 'application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x', 'application/octet-stream', ''];

const headerText = fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789=,._- '.split('')), maxLength: 200 });
const hostileHeaders = fc.record(
  {
    'content-type': fc.constantFrom(...CONTENT_TYPES),
    'stripe-signature': fc.oneof(headerText, headerText.map((v) => `t=${Math.floor(Date.now() / 1000)},v1=${v}`)),
    'x-razorpay-signature': headerText,
    'x-razorpay-event-id': headerText,
  },
  { requiredKeys: [] },
);

/** Counts every answer so the final check can compare rows written with deliveries accepted. */
let accepted = 0;

describe('hostile input (property-based, fast-check)', () => {
  let harness: Harness;

  before(async () => {
    harness = await Harness.start(database.url);
  });
  after(async () => {
    await harness?.close();
    await database.drop();
  });

  async function send(delivery: Delivery): Promise<Response> {
    const response = await harness.post(delivery);
    assert.ok(response.status < 500, `never a 5xx: got ${response.status} ${JSON.stringify(response.body)}`);
    if (response.status === 200 && response.body.outcome === 'recorded') accepted++;
    return response;
  }

  test('random bytes and random headers: 401 for Stripe and Razorpay (415 without a media type); 400/401/415 for PayU; never a row', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('stripe', 'razorpay', 'payu' as const), fc.uint8Array({ maxLength: 2048 }), hostileHeaders, async (provider, bytes, headers) => {
        const response = await send({ provider, headers: headers as Record<string, string>, body: Buffer.from(bytes) });
        if (provider === 'payu' || headers['content-type'] === '') {
          // An empty Content-Type is refused by the HTTP layer (415) before any signature check.
          assert.ok([400, 401, 415].includes(response.status), `${provider}: ${response.status}`);
        } else {
          assert.equal(response.status, 401, `${provider}: ${JSON.stringify(response.body)}`);
        }
      }),
      { numRuns: RUNS * 2 },
    );
    assert.equal(await harness.countRows('webhook_events'), 0);
  });

  test('a valid signature over anything but a JSON object: 400 malformed_body or missing_event_id', async () => {
    const notAnObject = fc.oneof(
      fc.string({ maxLength: 300 }),
      fc.json().filter((text) => {
        const value = JSON.parse(text) as unknown;
        return typeof value !== 'object' || value === null || Array.isArray(value);
      }),
      fc.string({ maxLength: 100 }).map((s) => `{"id":${JSON.stringify(s)}`),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('stripe', 'razorpay' as const), notAnObject, async (provider, body) => {
        fc.pre(!isJsonObject(body));
        const delivery = provider === 'stripe' ? stripeDelivery(body) : razorpayDelivery(body, 'rzp_evt_hostile');
        const response = await send(delivery);
        assert.equal(response.status, 400, `${provider} ${JSON.stringify(body)}: ${JSON.stringify(response.body)}`);
        assert.ok(['malformed_body', 'missing_event_id'].includes(String(response.body.error)));
      }),
      { numRuns: RUNS },
    );
    assert.equal(await harness.countRows('webhook_events'), 0);
  });

  test('a signed body truncated or re-encoded is refused with 401', async () => {
    const base = stripePaymentEvent('evt_reencode', 'payment_intent.succeeded', 'pi_reencode', { object: { description: 'Cours de fran\u00e7ais \u{1F4DA}' } });
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('stripe', 'razorpay' as const),
        fc.oneof(
          fc.nat().map((n) => ({ kind: 'truncate' as const, n })),
          fc.constantFrom({ kind: 'indent' as const, n: 2 }, { kind: 'ascii-escape' as const, n: 0 }, { kind: 'trailing-space' as const, n: 0 }),
        ),
        async (provider, change) => {
          const signed = provider === 'stripe' ? stripeDelivery(base) : razorpayDelivery(base, 'rzp_evt_reencode');
          const body = alter(signed.body, change);
          fc.pre(body !== signed.body);
          const response = await send({ ...signed, body });
          assert.equal(response.status, 401, `${provider} ${change.kind}: ${JSON.stringify(response.body)}`);
        },
      ),
      { numRuns: RUNS },
    );
    assert.equal(await harness.countRows('webhook_events'), 0);
  });

  test('huge and repeated signature headers: 401 (or 431 from the HTTP server past its header limit)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...SIGNATURE_HEADERS), fc.integer({ min: 1_000, max: 40_000 }), async (header, length) => {
        const valid = stripeDelivery(stripePaymentEvent('evt_huge_header', 'payment_intent.succeeded', 'pi_huge'));
        const provider = header === 'stripe-signature' ? 'stripe' : 'razorpay';
        const response = await send({ provider, headers: { 'content-type': 'application/json', [header]: `t=1,v1=${'a'.repeat(length)}` }, body: valid.body });
        assert.ok([401, 431].includes(response.status), `${header} x${length}: ${response.status}`);
      }),
      { numRuns: RUNS / 2 },
    );
    const forgedMany = stripeDelivery(stripePaymentEvent('evt_many_v1', 'payment_intent.succeeded', 'pi_many'));
    const manyV1 = `t=${Math.floor(Date.now() / 1000)},${Array.from({ length: 150 }, (_, i) => `v1=${i.toString(16).padStart(64, '0')}`).join(',')}`;
    assert.equal((await send({ ...forgedMany, headers: { ...forgedMany.headers, 'stripe-signature': manyV1 } })).status, 401);
    assert.equal(await harness.countRows('webhook_events'), 0);
  });

  test('Stripe signatures older than the tolerance are refused; fresh ones accepted', async () => {
    let n = 0;
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: -3600 * 24 * 30, max: 290 }), async (ageOffset) => {
        const id = `evt_age_${n++}`;
        const age = 300 + ageOffset;
        const delivery = stripeDelivery(stripePaymentEvent(id, 'payment_intent.created', `pi_age_${n}`), { timestamp: Math.floor(Date.now() / 1000) - age });
        const response = await send(delivery);
        if (age > 305) assert.equal(response.status, 401, `age ${age}s`);
        else if (age < 295) assert.equal(response.status, 200, `age ${age}s`);
      }),
      { numRuns: RUNS },
    );
  });

  test('PayU fields with "|" and any unicode: signed and unambiguous -> 200 byte-exact; "|" in a hashed field -> 400; tampered -> 401', async () => {
    let n = 0;
    const value = fc.string({ unit: fc.oneof(fc.constantFrom('|', '&', '=', '+', '%', ' '), fc.string({ unit: 'grapheme', minLength: 1, maxLength: 1 })), maxLength: 20 });
    await fc.assert(
      fc.asyncProperty(fc.record({ udf1: value, udf2: value, productinfo: value, firstname: value, udf9: value }), fc.boolean(), async (values, tamper) => {
        const mihpayid = `9${String(++n).padStart(8, '0')}`;
        const fields = { mihpayid, status: 'success', txnid: `T${mihpayid}`, amount: '10.00', email: 'payer@example.com', ...values };
        const signed = payuDelivery(fields);
        const body = tamper ? signed.body.replace('amount=10.00', 'amount=11.00') : signed.body;
        const response = await send({ ...signed, body });
        const hashedHasBar = [values.udf1, values.udf2, values.productinfo, values.firstname].some((v) => v.includes('|'));
        if (tamper) {
          assert.equal(response.status, 401);
        } else if (hashedHasBar) {
          assert.equal(response.status, 400, JSON.stringify(response.body));
          assert.match(String(response.body.message), /contains "\|"/);
        } else {
          assert.equal(response.status, 200, JSON.stringify(response.body));
          const stored = await harness.db.selectFrom('webhook_events').select('payload').where('provider', '=', 'payu').where('event_id', '=', `T${mihpayid}:success`).executeTakeFirstOrThrow();
          const payload = JSON.parse(stored.payload) as Record<string, string>;
          for (const [name, posted] of Object.entries(values)) assert.equal(payload[name], posted, name);
        }
      }),
      { numRuns: RUNS },
    );
  });

  test('after all of it: rows written equal deliveries accepted, and a valid delivery still gets 200', async () => {
    const response = await send(stripeDelivery(stripePaymentEvent('evt_after_hostile', 'payment_intent.succeeded', 'pi_after_hostile')));
    assert.equal(response.status, 200);
    assert.equal(await harness.countRows('webhook_events'), accepted);
  });
});

function isJsonObject(text: string): boolean {
  try {
    const value = JSON.parse(text) as unknown;
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
}

function alter(body: string, change: { kind: 'truncate' | 'indent' | 'ascii-escape' | 'trailing-space'; n: number }): string {
  switch (change.kind) {
    case 'truncate':
      return body.slice(0, change.n % body.length);
    case 'indent':
      return JSON.stringify(JSON.parse(body), null, change.n);
    case 'ascii-escape':
      // The same JSON value, with non-ASCII characters written as \u escapes.
      return body.replace(/[\u0080-\uffff]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
    case 'trailing-space':
      return `${body} `;
  }
}
