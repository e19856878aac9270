import assert from 'node:assert/strict';
import { createHash, createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { toDbTime } from '../../../src/db/schema.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { payload } from '../../support/fixtures.js';
import { Harness, type Response } from '../../support/harness.js';
import { rawExchange, requestHead } from '../../support/raw-http.js';
import { seedEvents } from '../../support/events.js';
import { payuDelivery, razorpayDelivery, stripeDelivery, stripePaymentEvent, TEST_SECRETS, type Delivery } from '../../support/signing.js';
import { selectEventRows } from '../../../src/db/event-rows.js';
import { storedKey } from '../../../src/model/delivery.js';

const sha256Hex = (text: string) => createHash('sha256').update(text).digest('hex');

/**
 * Hostile input over HTTP, on every store: forged, malformed and hostile-but-signed requests, the
 * way an attacker or a broken provider sends them. Whatever arrives, the answer is the right status
 * (never a 5xx), nothing unsigned is written, every acknowledged payload is stored byte for byte,
 * every valid event is processed (the hostile-but-signed ones it cannot take fail alone, with their
 * reason), no event is left stuck, and the server keeps serving. The last test checks all of it
 * over everything the others sent.
 */
const databases = await createTestDatabases();
const RUNS = 60;

const SIGNATURE_HEADERS = ['stripe-signature', 'x-razorpay-signature', 'x-razorpay-event-id'] as const;
const CONTENT_TYPES = ['application/json', 'application/x-www-form-urlencoded', 'text/plain', 'multipart/form-data; boundary=x', 'application/octet-stream', '', 'a/b/c', ';;;'];

const headerText = fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789=,._- '.split('')), maxLength: 200 });
const hostileHeaders = fc.record(
  {
    'content-type': fc.constantFrom(...CONTENT_TYPES),
    'stripe-signature': fc.oneof(
      headerText,
      headerText.map((v) => `t=${Math.floor(Date.now() / 1000)},v1=${v}`),
    ),
    'x-razorpay-signature': headerText,
    'x-razorpay-event-id': headerText,
  },
  { requiredKeys: [] },
);

/** A signed PayU success callback with every field PayU posts (the sample's), for `txnid`. */
const PAYU_SAMPLE = Object.fromEntries(new URLSearchParams(payload('payu', 'payment_success.form-urlencoded.txt').toString('utf8')));
function payuSuccess(txnid: string, changed: Record<string, string> = {}) {
  const { hash: _hash, key: _key, ...fields } = PAYU_SAMPLE;
  return { ...fields, txnid, udf1: `u_${txnid}`, udf2: 'c_hostile', ...changed };
}

/** A Razorpay payment.captured event for the course platform, its body padded to `bytes` exactly when given. */
function razorpayCaptured(paymentId: string, options: { bytes?: number; userId?: string; currency?: string; email?: string } = {}): string {
  const event = (pad: string) => ({
    entity: 'event',
    event: 'payment.captured',
    contains: ['payment'],
    payload: {
      payment: {
        entity: {
          id: paymentId,
          entity: 'payment',
          amount: 49_900,
          currency: options.currency ?? 'INR',
          status: 'captured',
          email: options.email ?? 'buyer@example.com',
          description: 'Cours de fran\u00e7ais \u{1F4DA}',
          notes: { user_id: options.userId ?? `u_${paymentId.slice(0, 40)}`, course_id: 'c_hostile', pad },
        },
      },
    },
    created_at: 1_767_225_600,
  });
  const bare = JSON.stringify(event(''));
  if (options.bytes === undefined) return bare;
  const padBytes = options.bytes - Buffer.byteLength(bare);
  assert.ok(padBytes >= 0, `${options.bytes} bytes is smaller than the event itself`);
  return JSON.stringify(event('x'.repeat(padBytes)));
}

/** The raw body of a payu form post as the JSON object the store keeps. */
function payuStored(delivery: Delivery): Record<string, string> {
  const body = delivery.body.toString();
  if (delivery.headers['content-type']?.startsWith('application/json')) return JSON.parse(body) as Record<string, string>;
  return Object.fromEntries(new URLSearchParams(body));
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];

  describe(`hostile input (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let harness: Harness;
    /** Every delivery answered "recorded", by provider and event id: what its row must hold. */
    const acknowledged = new Map<string, Delivery>();
    /** Signed events the service cannot take as they are: each must end `failed`, without retry, with its reason. */
    const expectedFailures = new Map<string, RegExp>();
    /** Rows written around the HTTP path (a row stored unreadable). */
    let seededRows = 0;
    let serverErrors = 0;

    before(async () => {
      // Short HTTP timeouts, so the partial and slow requests are judged in seconds.
      harness = await Harness.start((database as TestDatabase).url, { HTTP_HEADERS_TIMEOUT_MS: '1000', HTTP_REQUEST_TIMEOUT_MS: '3000', HTTP_IDLE_TIMEOUT_MS: '2000' });
    });
    after(async () => {
      await harness?.close();
      await (database as TestDatabase).drop();
    });

    async function send(delivery: Delivery): Promise<Response> {
      const response = await harness.post(delivery);
      if (response.status >= 500) serverErrors++;
      assert.ok(response.status < 500, `never a 5xx: got ${response.status} ${JSON.stringify(response.body)}`);
      if (response.status === 200 && response.body.outcome === 'recorded') acknowledged.set(`${delivery.provider}\u0000${String(response.body.eventId)}`, delivery);
      return response;
    }

    async function eventRow(provider: string, eventId: string) {
      return selectEventRows(harness.db).where('provider', '=', provider).where('event_id', '=', eventId).executeTakeFirst();
    }

    test('random bytes and random headers: 401 for Stripe and Razorpay, whatever the content type; 400/401/415 for PayU; never a row', async () => {
      await fc.assert(
        fc.asyncProperty(fc.constantFrom('stripe', 'razorpay', 'payu' as const), fc.uint8Array({ maxLength: 2048 }), hostileHeaders, async (provider, bytes, headers) => {
          const response = await send({ provider, headers: headers, body: Buffer.from(bytes) });
          if (provider === 'payu') assert.ok([400, 401, 415].includes(response.status), `${provider}: ${response.status}`);
          else assert.equal(response.status, 401, `${provider} ${JSON.stringify(headers['content-type'])}: ${JSON.stringify(response.body)}`);
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
            const stored = await selectEventRows(harness.db).where('provider', '=', 'payu').where('event_id', '=', `T${mihpayid}:success`).executeTakeFirstOrThrow();
            const payload = JSON.parse(stored.payload) as Record<string, string>;
            for (const [name, posted] of Object.entries(values)) assert.equal(payload[name], posted, name);
          }
        }),
        { numRuns: RUNS },
      );
    });

    test('bodies of 64 KiB +/- 1, 70-80 KB and 1 MiB, at once with small ones (sharing record batches): each acknowledged one stored byte for byte; past the limit, 413', async () => {
      const sizes = [65_535, 65_536, 65_537, 70_000, 80_000, 1 << 20, (1 << 20) + 1];
      for (const round of [1, 2]) {
        const deliveries = sizes.flatMap((bytes, i) => [
          { bytes, delivery: razorpayDelivery(razorpayCaptured(`pay_large_${round}_${i}`, { bytes }), `rzp_evt_large_${round}_${i}`) },
          { bytes: 0, delivery: razorpayDelivery(razorpayCaptured(`pay_small_${round}_${i}`), `rzp_evt_small_${round}_${i}`) },
        ]);
        const answers = await Promise.all(deliveries.map(({ delivery }) => send(delivery)));
        for (const [i, { bytes, delivery }] of deliveries.entries()) {
          const eventId = delivery.headers['x-razorpay-event-id']!;
          if (bytes > 1 << 20) {
            assert.equal(answers[i]!.status, 413, `${eventId} (${bytes} bytes)`);
            assert.equal(await eventRow('razorpay', eventId), undefined);
            continue;
          }
          assert.equal(answers[i]!.status, 200, `${eventId} (${bytes} bytes): ${JSON.stringify(answers[i]!.body)}`);
          const row = await eventRow('razorpay', eventId);
          assert.equal(Buffer.byteLength(row?.payload ?? ''), Buffer.byteLength(delivery.body), `${eventId}: stored size`);
          assert.ok(row?.payload === delivery.body, `${eventId}: stored byte for byte`);
        }
      }
    });

    test('a stored row that cannot be read fails alone, with its reason and no retry; the events claimed with it are processed', async () => {
      // As a payload cut on the way in was stored before issue 27: the JSON ends early.
      const now = toDbTime(harness.clock.now());
      await seedEvents(harness.db, [
        {
          provider: 'razorpay',
          event_id: 'rzp_evt_unreadable',
          event_type: 'payment.captured',
          payload: razorpayCaptured('pay_unreadable').slice(0, 100),
          status: 'received',
          attempts: 0,
          next_attempt_at: now,
          created_at: now,
        },
      ]);
      seededRows++;
      expectedFailures.set('razorpay\u0000rzp_evt_unreadable', /^the stored event cannot be read: its payload \(100 bytes stored\) is not valid JSON/);
      const valid = Array.from({ length: 12 }, (_, i) => razorpayDelivery(razorpayCaptured(`pay_beside_${i}`), `rzp_evt_beside_${i}`));
      assert.ok((await Promise.all(valid.map(send))).every((answer) => answer.status === 200));
      await harness.waitFor('the unreadable event to fail and the others to be processed', async () => {
        const rows = await harness.db
          .selectFrom('webhook_events')
          .select(['event_id', 'status'])
          .where('event_id', 'like', 'rzp_evt_%')
          .where('event_id', 'not like', 'rzp_evt_large%')
          .where('event_id', 'not like', 'rzp_evt_small%')
          .execute();
        return rows.every((row) => (row.event_id === 'rzp_evt_unreadable' ? row.status === 'failed' : row.status === 'processed'));
      });
      const failed = await eventRow('razorpay', 'rzp_evt_unreadable');
      assert.equal(failed?.next_attempt_at, null, 'no retry: the row would not become readable');
    });

    test('every PayU field tampered alone, replayed: a hashed one is refused (401), an unhashed one is the same event (a duplicate), one payment and one set of effects', async () => {
      const txnid = 'T_TAMPER_1';
      const original = payuDelivery(payuSuccess(txnid, { unmappedstatus: 'auth' }));
      const first = await send(original);
      assert.deepEqual([first.status, first.body.outcome, first.body.eventId], [200, 'recorded', `${txnid}:success`]);
      const hashed = new Set(['status', 'txnid', 'amount', 'email', 'firstname', 'productinfo', 'udf1', 'udf2', 'udf3', 'udf4', 'udf5', 'key']);
      const fields = Object.fromEntries(new URLSearchParams(original.body));
      for (const name of Object.keys(fields).filter((field) => field !== 'hash')) {
        const tampered = new URLSearchParams({ ...fields, [name]: name === 'status' ? 'failure' : name === 'unmappedstatus' ? 'captured' : `${fields[name]}9` });
        const answer = await send({ ...original, body: tampered.toString() });
        if (hashed.has(name)) assert.equal(answer.status, 401, `${name} is hashed: ${JSON.stringify(answer.body)}`);
        else assert.deepEqual([answer.status, answer.body.outcome], [200, 'duplicate'], `${name} is not hashed: ${JSON.stringify(answer.body)}`);
      }
      await harness.waitFor('the callback processed', async () => (await eventRow('payu', `${txnid}:success`))?.status === 'processed');
      const payments = await harness.db.selectFrom('payments').select(['payment_id', 'status']).where('provider', '=', 'payu').where('payment_id', '=', txnid).execute();
      assert.deepEqual(payments, [{ payment_id: txnid, status: 'captured' }], 'the state comes from status, never from unmappedstatus');
      assert.equal((await harness.courseDb.selectFrom('orders').select('id').where('payment_id', '=', txnid).execute()).length, 1);
      const effects = await harness.db.selectFrom('outbox').select('idempotency_key').where('idempotency_key', 'like', `%:payu:${txnid}`).orderBy('idempotency_key').execute();
      assert.deepEqual(
        effects.map((e) => e.idempotency_key),
        [`fulfilment:payu:${txnid}`, `receipt:payu:${txnid}`],
      );

      // Failed attempts of one transaction (each its own mihpayid) are one failed event; its success later is another.
      const failure = (mihpayid: string) => payuDelivery(payuSuccess('T_TAMPER_2', { status: 'failure', mihpayid }));
      assert.equal((await send(failure('403993715500000901'))).body.outcome, 'recorded');
      assert.equal((await send(failure('403993715500000902'))).body.outcome, 'duplicate');
      assert.equal((await send(payuDelivery(payuSuccess('T_TAMPER_2', { mihpayid: '403993715500000903' })))).body.outcome, 'recorded');
    });

    test('deeply nested and wide JSON to every endpoint, unsigned: refused at once, PayU past its body limit before it is parsed', async (t) => {
      const nested = (bytes: number) => `{"a":${'['.repeat((bytes - 7) / 2)}${']'.repeat((bytes - 7) / 2)}}`;
      const wide = (bytes: number) => `{${Array.from({ length: Math.floor(bytes / 12) }, (_, i) => `"k${String(i).padStart(6, '0')}":1`).join(',')}}`;
      const json = { 'content-type': 'application/json' };
      const cases: Array<{ name: string; delivery: Delivery; status: number; error?: RegExp }> = [
        { name: 'stripe nested 1 MiB', delivery: { provider: 'stripe', headers: { ...json, 'stripe-signature': 't=1,v1=00' }, body: nested((1 << 20) - 1) }, status: 401 },
        {
          name: 'razorpay nested 1 MiB',
          delivery: { provider: 'razorpay', headers: { ...json, 'x-razorpay-signature': '00', 'x-razorpay-event-id': 'rzp_evt_nested' }, body: nested((1 << 20) - 1) },
          status: 401,
        },
        { name: 'stripe wide 1 MiB', delivery: { provider: 'stripe', headers: { ...json, 'stripe-signature': 't=1,v1=00' }, body: wide(1 << 20) }, status: 401 },
        { name: 'payu nested 1 MiB', delivery: { provider: 'payu', headers: json, body: nested((1 << 20) - 1) }, status: 413 },
        {
          name: 'payu wide form 1 MiB',
          delivery: { provider: 'payu', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'a=1&'.repeat(1 << 18) },
          status: 413,
        },
        { name: 'payu nested 15 KiB', delivery: { provider: 'payu', headers: json, body: nested(15 * 1024 + 1) }, status: 400, error: /nests JSON deeper than 1 level/ },
        {
          name: 'payu wide form 15 KiB',
          delivery: { provider: 'payu', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: Array.from({ length: 2000 }, (_, i) => `f${i}=1`).join('&') },
          status: 400,
          error: /more than 256 fields/,
        },
        { name: 'payu wide JSON 15 KiB', delivery: { provider: 'payu', headers: json, body: wide(15 * 1024) }, status: 400, error: /more than 256 fields/ },
      ];
      for (const { name, delivery, status, error } of cases) {
        const started = performance.now();
        const answer = await Promise.all(Array.from({ length: 4 }, () => send(delivery)));
        t.diagnostic(`${name}: 4 at once answered in ${Math.round(performance.now() - started)} ms`);
        for (const { status: got, body } of answer) {
          assert.equal(got, status, `${name}: ${JSON.stringify(body)}`);
          if (error) assert.match(String(body.message), error, name);
        }
      }
    });

    test('ids at every length boundary: a key of 255 characters is stored whole, a longer one under its digest, never refused', async () => {
      const id = (length: number, tag: string) => `evt_${tag}_`.padEnd(length, 'x');
      for (const length of [254, 255]) {
        assert.equal((await send(stripeDelivery(stripePaymentEvent(id(length, `len${length}`), 'payment_intent.created', `pi_len_${length}`)))).status, 200);
        assert.equal((await eventRow('stripe', id(length, `len${length}`)))?.event_id.length, length);
      }
      // A refusal would only make the provider retry it for days: the event is kept under a key of its id.
      const long = stripeDelivery(stripePaymentEvent(id(256, 'len256'), 'payment_intent.created', 'pi_len_256'));
      const [first, again] = [await send(long), await send(long)];
      assert.deepEqual([first.status, first.body.outcome, again.status, again.body.outcome], [200, 'recorded', 200, 'duplicate']);
      assert.equal((await eventRow('stripe', storedKey(id(256, 'len256'))))?.event_id, `sha256:${sha256Hex(JSON.stringify(id(256, 'len256')))}`);
      const longTxnid = await send(payuDelivery(payuSuccess('T'.repeat(250))));
      assert.equal(longTxnid.status, 200, 'a txnid whose key would pass 255 characters');
      assert.ok(await eventRow('payu', storedKey(`${'T'.repeat(250)}:success`)));
    });

    test('ids with a lone UTF-16 surrogate ("X\\ud800", "X\\udc00") or a control character are stored under keys of their own, never as one id', async () => {
      const ids = ['evt_X\ud800', 'evt_X\udc00', 'evt_bell\u0007', 'evt_line\nbreak'];
      for (const [i, eventId] of ids.entries()) {
        const answer = await send(stripeDelivery(stripePaymentEvent(eventId, 'payment_intent.created', `pi_odd_${i}`)));
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
      }
      const keys = ids.map(storedKey);
      assert.equal(new Set(keys).size, ids.length);
      for (const key of keys) assert.ok(await eventRow('stripe', key), key);
      assert.equal(await eventRow('stripe', 'evt_X\ufffd'), undefined);
    });

    test('two payments whose 250-character ids share a prefix get their own effects; a field that cannot be stored whole fails its event alone, with its reason', async () => {
      const twins = ['A', 'B'].map((last) => `pay_${'t'.repeat(245)}${last}`);
      for (const [i, paymentId] of twins.entries())
        assert.equal((await send(razorpayDelivery(razorpayCaptured(paymentId, { userId: `u_twin_${i}` }), `rzp_evt_twin_${i}`))).status, 200);
      // Signed, but impossible to store whole: each fails alone, for an operator.
      const refused: Array<[string, string, RegExp]> = [
        ['rzp_evt_long_payment', razorpayCaptured(`pay_${'p'.repeat(252)}`), /paymentId is longer than 255 characters/],
        ['rzp_evt_long_user', razorpayCaptured('pay_long_user', { userId: 'u'.repeat(256) }), /userId is longer than 255 characters/],
        ['rzp_evt_long_currency', razorpayCaptured('pay_long_currency', { currency: 'C'.repeat(65) }), /currency is longer than 64 characters/],
        ['rzp_evt_lone_user', razorpayCaptured('pay_lone_user', { userId: 'u\udc00' }), /userId is not valid Unicode/],
      ];
      for (const [eventId, body, reason] of refused) {
        assert.equal((await send(razorpayDelivery(body, eventId))).status, 200, eventId);
        expectedFailures.set(`razorpay\u0000${eventId}`, reason);
      }
      await harness.waitFor('the twins processed', async () =>
        (await Promise.all(['rzp_evt_twin_0', 'rzp_evt_twin_1'].map((e) => eventRow('razorpay', e)))).every((row) => row?.status === 'processed'),
      );
      const effects = await harness.db.selectFrom('outbox').select(['idempotency_key', 'payload']).where('payload', 'like', '%pay_tttt%').execute();
      assert.equal(effects.length, 4, 'a receipt and a fulfilment for each payment');
      assert.deepEqual(new Set(effects.map((e) => (JSON.parse(e.payload) as { paymentId: string }).paymentId)), new Set(twins));
      assert.equal(new Set(effects.map((e) => e.idempotency_key)).size, 4, 'four keys');
      for (const { idempotency_key: key } of effects) assert.match(key, /^(receipt|fulfilment):razorpay:sha256:[0-9a-f]{64}$/);
    });

    test('partial and slow requests: answered 408 and closed once their timeout passes; a slow one within it is served', async () => {
      const stripe = stripeDelivery(stripePaymentEvent('evt_slow_ok', 'payment_intent.created', 'pi_slow_ok'));
      const head = (length: number) => requestHead('POST', '/webhooks/stripe', { ...stripe.headers, 'content-length': length });
      const stalled = await Promise.all([
        rawExchange(harness.url, { head: 'POST /webhooks/stripe HTTP/1.1\r\nHost: inbox.test\r\nContent-Ty', waitMs: 8000 }),
        rawExchange(harness.url, { head: head(1000), body: Buffer.from('{"id":'), waitMs: 8000 }),
        rawExchange(harness.url, { head: head(100_000), body: Buffer.alloc(100_000, 0x20), chunkBytes: 10, everyMs: 20, waitMs: 8000 }),
        rawExchange(harness.url, { head: 'POST /webhooks/stripe HTTP/1.1\r\n', body: Buffer.from('X-Slow: a\r\n'.repeat(100)), chunkBytes: 1, everyMs: 20, waitMs: 8000 }),
      ]);
      for (const [i, exchange] of stalled.entries()) {
        assert.equal(exchange.status, 408, `stalled request ${i}: ${exchange.text.slice(0, 200)}`);
        assert.equal(exchange.headers.connection, 'close');
        assert.ok(exchange.closedAfterMs !== null && exchange.closedAfterMs < 6000, `stalled request ${i} closed after ${exchange.closedAfterMs} ms`);
      }
      const slow = await rawExchange(harness.url, { head: head(Buffer.byteLength(stripe.body)), body: Buffer.from(stripe.body), chunkBytes: 64, everyMs: 5, waitMs: 5000 });
      assert.equal(slow.status, 200, slow.text.slice(0, 300));
      acknowledged.set('stripe\u0000evt_slow_ok', stripe);
    });

    test('a keep-alive connection left idle is closed after HTTP_IDLE_TIMEOUT_MS', async () => {
      const idle = await rawExchange(harness.url, { head: requestHead('GET', '/healthz', {}), waitMs: 8000 });
      assert.equal(idle.status, 200);
      assert.ok(idle.closedAfterMs !== null && idle.closedAfterMs >= 1500 && idle.closedAfterMs < 6000, `closed after ${idle.closedAfterMs} ms`);
    });

    test('odd methods get 405 with Allow: POST; any content type is read on a signed Stripe or Razorpay delivery', async () => {
      for (const method of ['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'TRACE', 'PROPFIND', 'SEARCH', 'MKCOL', 'PURGE']) {
        const exchange = await rawExchange(harness.url, { head: requestHead(method, '/webhooks/stripe', { 'content-length': 0 }), waitMs: 300 });
        assert.equal(exchange.status, 405, `${method}: ${exchange.text.slice(0, 200)}`);
        assert.equal(exchange.headers.allow, 'POST', method);
      }
      const connect = await rawExchange(harness.url, { head: 'CONNECT inbox.test:443 HTTP/1.1\r\nHost: inbox.test:443\r\n\r\n', waitMs: 2000 });
      assert.equal(connect.status, 405, connect.text);
      for (const [i, contentType] of ['a/b/c', ';;;', '', 'application/json; charset=utf-16', 'text/html', 'application/x-www-form-urlencoded'].entries()) {
        for (const delivery of [
          stripeDelivery(stripePaymentEvent(`evt_ct_${i}`, 'payment_intent.created', `pi_ct_${i}`)),
          razorpayDelivery(razorpayCaptured(`pay_ct_${i}`), `rzp_evt_ct_${i}`),
        ]) {
          const answer = await send({ ...delivery, headers: { ...delivery.headers, 'content-type': contentType } });
          assert.equal(answer.status, 200, `${delivery.provider} with Content-Type ${JSON.stringify(contentType)}: ${JSON.stringify(answer.body)}`);
          const stored = JSON.parse((await eventRow(delivery.provider, String(answer.body.eventId)))!.headers) as Record<string, string>;
          assert.equal(stored['content-type'], contentType === '' ? undefined : contentType, 'the headers are stored as sent');
        }
      }
      // Latin-1, signed as sent: authentic, but not the UTF-8 JSON a payload must be.
      const latin1 = Buffer.from('{"id":"evt_latin1","type":"payment_intent.created","d":"fran\u00e7ais"}', 'latin1');
      const t = Math.floor(Date.now() / 1000);
      const v1 = createHmac('sha256', TEST_SECRETS.stripe).update(`${t}.`).update(latin1).digest('hex');
      const notUtf8 = await send({ provider: 'stripe', headers: { 'content-type': 'application/json; charset=latin1', 'stripe-signature': `t=${t},v1=${v1}` }, body: latin1 });
      assert.deepEqual([notUtf8.status, notUtf8.body.error], [400, 'malformed_body'], JSON.stringify(notUtf8.body));
      const gzipped = stripeDelivery(stripePaymentEvent('evt_gzip', 'payment_intent.created', 'pi_gzip'));
      const encoded = await send({ ...gzipped, headers: { ...gzipped.headers, 'content-encoding': 'gzip' }, body: gzipSync(gzipped.body) });
      assert.equal(encoded.status, 401, 'a body is verified as sent, never decoded');
    });

    test('NUL: a raw NUL byte is not JSON (400); a \\u0000 escape is stored byte for byte, and a key holding one fails its event alike on every store', async () => {
      const raw = Buffer.from('{"id":"evt_nul_raw","type":"payment_intent.created","d":"a\u0000b"}');
      const t = Math.floor(Date.now() / 1000);
      const v1 = createHmac('sha256', TEST_SECRETS.stripe).update(`${t}.`).update(raw).digest('hex');
      const refused = await send({ provider: 'stripe', headers: { 'content-type': 'application/json', 'stripe-signature': `t=${t},v1=${v1}` }, body: raw });
      assert.deepEqual([refused.status, refused.body.error], [400, 'malformed_body'], JSON.stringify(refused.body));
      // JSON text holds the escape (six ASCII bytes), which every store keeps; the value it stands for is a NUL character.
      const inText = stripeDelivery({ ...stripePaymentEvent('evt_nul_text', 'payment_intent.succeeded', 'pi_nul_text'), note: 'a\u0000b' });
      const inKey = stripeDelivery(stripePaymentEvent('evt_nul_key', 'payment_intent.succeeded', 'pi_nul\u0000key'));
      for (const delivery of [inText, inKey]) {
        assert.ok(delivery.body.includes('\\u0000'));
        const answer = await send(delivery);
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
      }
      expectedFailures.set('stripe\u0000evt_nul_key', /paymentId holds a NUL character \(U\+0000\), so it cannot be stored whole/);
      await harness.waitFor(
        'both events settled',
        async () =>
          (
            await harness.db
              .selectFrom('webhook_events')
              .select('id')
              .where('event_id', 'in', ['evt_nul_text', 'evt_nul_key'])
              .where('status', 'in', ['processed', 'failed'])
              .execute()
          ).length === 2,
        30_000,
      );
      assert.equal((await eventRow('stripe', 'evt_nul_text'))!.status, 'processed');
    });

    test('parser errors answer 400 and 431 with Connection: close', async () => {
      const malformed = await rawExchange(harness.url, { head: 'POST /webhooks/stripe HTTP/1.1\r\nHost: inbox.test\r\nContent-Length: abc\r\n\r\n', waitMs: 3000 });
      assert.deepEqual([malformed.status, malformed.headers.connection], [400, 'close'], malformed.text);
      const overflow = await rawExchange(harness.url, { head: requestHead('POST', '/webhooks/stripe', { 'x-big': 'a'.repeat(20_000) }), waitMs: 3000 });
      assert.deepEqual([overflow.status, overflow.headers.connection], [431, 'close'], overflow.text.slice(0, 200));
    });

    test('an upload past the body limit gets its 413, not a reset while it is still sending', async () => {
      for (const [provider, bytes] of [
        ['payu', 3 << 20],
        ['stripe', 3 << 20],
        ['razorpay', (1 << 20) + 1],
        ['payu', (16 << 10) + 1],
      ] as const) {
        const head = requestHead('POST', `/webhooks/${provider}`, {
          'content-type': provider === 'payu' ? 'application/x-www-form-urlencoded' : 'application/json',
          'content-length': bytes,
        });
        // Sent as a client does, a chunk at a time: the server answers before the body has all arrived.
        const upload = await rawExchange(harness.url, { head, body: Buffer.alloc(bytes, 0x61), chunkBytes: 64 * 1024, everyMs: 2, waitMs: 3000 });
        assert.equal(upload.error, null, `${provider}, ${bytes} bytes: the upload was cut off`);
        assert.equal(upload.status, 413, `${provider}, ${bytes} bytes: ${upload.text.slice(0, 200)}`);
      }
    });

    test('after all of it: every acknowledged payload stored byte for byte, every valid event processed, no row from unsigned input, no 5xx, nothing stuck, still serving', async () => {
      const answer = await send(stripeDelivery(stripePaymentEvent('evt_after_hostile', 'payment_intent.succeeded', 'pi_after_hostile')));
      assert.equal(answer.status, 200);
      await harness.waitFor(
        'every event processed or failed',
        async () => (await harness.db.selectFrom('webhook_events').select('id').where('status', 'in', ['received', 'processing']).execute()).length === 0,
        30_000,
      );
      const rows = await selectEventRows(harness.db).execute();
      assert.equal(rows.length, acknowledged.size + seededRows, 'one row per acknowledged delivery, and none from anything else');
      for (const [key, delivery] of acknowledged) {
        const [provider, eventId] = key.split('\u0000') as [string, string];
        const row = rows.find((r) => r.provider === provider && r.event_id === eventId);
        assert.ok(row, `${key} is stored`);
        if (provider === 'payu') assert.deepEqual(JSON.parse(row.payload), payuStored(delivery), key);
        else assert.ok(Buffer.from(row.payload, 'utf8').equals(Buffer.from(delivery.body)), `${key}: stored byte for byte`);
      }
      for (const row of rows) {
        const reason = expectedFailures.get(`${row.provider}\u0000${row.event_id}`);
        if (reason === undefined) {
          assert.equal(row.status, 'processed', `${row.provider}/${row.event_id}: ${row.last_error}`);
        } else {
          assert.deepEqual([row.status, row.next_attempt_at], ['failed', null], `${row.event_id} failed without retry`);
          assert.match(row.last_error ?? '', reason, row.event_id);
        }
      }
      assert.equal(serverErrors, 0);
      assert.equal((await harness.request('GET', '/healthz')).status, 200);
    });
  });
}

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
