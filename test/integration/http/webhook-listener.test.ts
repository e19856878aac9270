import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import type { DeliveryStatsRecorder } from '../../../src/observability/delivery-stats.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import type { FastifyInstance } from 'fastify';
import { createApp } from '../../../src/app.js';
import type { Inbox } from '../../../src/inbox.js';
import { testConfig } from '../../support/harness.js';
import { rawExchange } from '../../support/raw-http.js';
import { payuDelivery, payuSuccessFields, razorpayDelivery, stripeDelivery, stripePaymentEvent, type Delivery } from '../../support/signing.js';

/**
 * The server's own listener answers well-formed webhook deliveries before fastify, and passes the rest
 * on: a delivery must get the same answer and log line either way, and what fastify answers
 * (app.inject() always goes through it) is the reference.
 */

type LogLine = Record<string, unknown> & { msg: string };

/** Each case is built twice, with a different key, so the HTTP answer and inject's are for distinct events. */
const CASES: Array<{ name: string; delivery: (key: string) => Delivery & { method?: string; path?: string } }> = [
  { name: 'Stripe, new event', delivery: (key) => stripeDelivery(stripePaymentEvent(`evt_l_${key}`, 'payment_intent.succeeded', `pi_l_${key}`)) },
  { name: 'Stripe, forged', delivery: (key) => stripeDelivery(stripePaymentEvent(`evt_f_${key}`, 'payment_intent.succeeded', `pi_f_${key}`), { secret: 'whsec_forger' }) },
  { name: 'Stripe, signed malformed JSON', delivery: () => stripeDelivery('{"id":"evt_broken",') },
  { name: 'Stripe, signed event without id', delivery: () => stripeDelivery({ type: 'payment_intent.succeeded', data: { object: {} } }) },
  {
    name: 'Razorpay, new event',
    delivery: (key) => razorpayDelivery({ event: 'payment.captured', payload: { payment: { entity: { id: `pay_l_${key}`, amount: 100 } } } }, `rzp_l_${key}`),
  },
  { name: 'PayU, form post', delivery: (key) => payuDelivery(payuSuccessFields(`T_${key}`)) },
  { name: 'PayU, a media type it never posts', delivery: (key) => ({ ...payuDelivery(payuSuccessFields(`T_mt_${key}`)), headers: { 'content-type': 'text/plain' } }) },
  { name: 'unknown provider', delivery: (key) => ({ ...stripeDelivery(stripePaymentEvent(`evt_u_${key}`, 'x', 'pi_u')), path: '/webhooks/paypal' }) },
  { name: 'GET on a webhook route', delivery: () => ({ provider: 'stripe', headers: {}, body: '', method: 'GET' }) },
  {
    name: 'a query string',
    delivery: (key) => ({ ...stripeDelivery(stripePaymentEvent(`evt_q_${key}`, 'payment_intent.succeeded', `pi_q_${key}`)), path: '/webhooks/stripe?attempt=2' }),
  },
];

describe('the webhook listener (MariaDB)', () => {
  let db: TestDatabase;
  let app: FastifyInstance;
  let inbox: Inbox;
  let url: string;
  const lines: LogLine[] = [];
  let fastifySaw = 0;
  const capture = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line) as LogLine) });

  before(async () => {
    const created = await createTestDatabase('mysql');
    if ('skip' in created) throw new Error(created.skip);
    db = created;
    ({ app, inbox } = await createApp(testConfig(db.url, { BODY_LIMIT_BYTES: '4096', TRUST_PROXY: '127.0.0.1' }), { logger: capture, workers: false }));
    app.addHook('onRequest', async () => {
      fastifySaw += 1;
    });
    url = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  after(async () => {
    await app?.close();
    await db?.drop();
  });

  const overHttp = async (delivery: Delivery & { method?: string; path?: string }) => {
    const response = await fetch(`${url}${delivery.path ?? `/webhooks/${delivery.provider}`}`, {
      method: delivery.method ?? 'POST',
      headers: delivery.headers,
      body: delivery.method === 'GET' ? undefined : delivery.body,
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: JSON.parse(text) as Record<string, unknown> };
  };
  const injected = async (delivery: Delivery & { method?: string; path?: string }) => {
    const response = await app.inject({
      method: (delivery.method ?? 'POST') as 'POST',
      url: delivery.path ?? `/webhooks/${delivery.provider}`,
      headers: delivery.headers,
      payload: delivery.method === 'GET' ? undefined : delivery.body,
    });
    return { status: response.statusCode, headers: response.headers, body: response.json<Record<string, unknown>>() };
  };
  /** An answer with what differs between two distinct events (their ids) taken out. */
  const shape = (answer: { status: number; body: Record<string, unknown> }) => ({
    status: answer.status,
    ...answer.body,
    eventId: typeof answer.body.eventId,
    message: typeof answer.body.message,
  });

  for (const { name, delivery } of CASES) {
    test(`${name}: answered over HTTP as fastify answers it`, async () => {
      const http = await overHttp(delivery('http'));
      const reference = await injected(delivery('inject'));
      assert.deepEqual(shape(http), shape(reference));
      assert.equal(http.body.message, reference.body.message);
      for (const header of ['content-type', 'retry-after', 'allow']) assert.equal(http.headers.get(header) ?? undefined, reference.headers[header], header);
      assert.match(http.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
    });
  }

  test('a well-formed delivery never reaches fastify; one whose length is not declared, or refused before its body, does', async () => {
    const before = fastifySaw;
    const accepted = await overHttp(stripeDelivery(stripePaymentEvent('evt_l_direct', 'payment_intent.succeeded', 'pi_l_direct')));
    const forged = await overHttp(stripeDelivery(stripePaymentEvent('evt_l_forged', 'payment_intent.succeeded', 'pi_l_forged'), { secret: 'whsec_forger' }));
    assert.deepEqual([accepted.status, forged.status, fastifySaw - before], [200, 401, 0]);

    const chunked = stripeDelivery(stripePaymentEvent('evt_l_chunked', 'payment_intent.succeeded', 'pi_l_chunked'));
    const head = `POST /webhooks/stripe HTTP/1.1\r\nhost: x\r\nconnection: close\r\ntransfer-encoding: chunked\r\ncontent-type: application/json\r\nstripe-signature: ${chunked.headers['stripe-signature']}\r\n\r\n`;
    const body = Buffer.from(chunked.body);
    const exchange = await rawExchange(url, {
      head: Buffer.concat([Buffer.from(head), Buffer.from(`${body.length.toString(16)}\r\n`), body, Buffer.from('\r\n0\r\n\r\n')]),
      waitMs: 5000,
    });
    assert.equal(exchange.status, 200, exchange.text);
    const payuRefused = await overHttp({ ...payuDelivery(payuSuccessFields('T_refused')), headers: { 'content-type': 'text/plain' } });
    assert.equal(payuRefused.status, 415);
    assert.equal(fastifySaw - before, 2);
  });

  test('a body over its limit is refused 413 by fastify, as before', async () => {
    const large = stripeDelivery(stripePaymentEvent('evt_l_large', 'payment_intent.succeeded', 'pi_l_large', { object: { padding: 'x'.repeat(5000) } }));
    const answer = await overHttp(large);
    assert.equal(answer.status, 413);
    assert.equal(answer.body.error, 'payload_too_large');
  });

  test('a caller-given X-Request-Id is answered and logged; the log line carries the outcome and timing', async () => {
    lines.length = 0;
    const delivery = stripeDelivery(stripePaymentEvent('evt_l_logged', 'payment_intent.succeeded', 'pi_l_logged'));
    const answer = await overHttp({ ...delivery, headers: { ...delivery.headers, 'x-request-id': 'trace-42' } });
    assert.equal(answer.headers.get('x-request-id'), 'trace-42');
    const line = lines.find((entry) => entry.msg === 'delivery acknowledged');
    assert.ok(line, JSON.stringify(lines));
    assert.deepEqual(
      { reqId: line.reqId, provider: line.provider, eventId: line.eventId, outcome: line.outcome, statusCode: line.statusCode, level: line.level },
      { reqId: 'trace-42', provider: 'stripe', eventId: 'evt_l_logged', outcome: 'recorded', statusCode: 200, level: 30 },
    );
    assert.equal(typeof line.ackMs, 'number');
    assert.ok(!JSON.stringify(line).includes('pi_l_logged'), 'the log line holds no payload');
  });

  test('a refused delivery is logged with its reason and listed with the address the trusted proxy forwarded', async () => {
    lines.length = 0;
    const forged = stripeDelivery(stripePaymentEvent('evt_l_proxy', 'payment_intent.succeeded', 'pi_l_proxy'), { secret: 'whsec_forger' });
    const answer = await overHttp({ ...forged, headers: { ...forged.headers, 'x-forwarded-for': '203.0.113.9' } });
    assert.equal(answer.status, 401);
    const line = lines.find((entry) => entry.msg === 'delivery rejected');
    assert.ok(line, JSON.stringify(lines));
    assert.deepEqual({ error: line.error, statusCode: line.statusCode }, { error: 'invalid_signature', statusCode: 401 });
    assert.equal(typeof line.reason, 'string');

    await (inbox.metrics as DeliveryStatsRecorder).flush();
    const rows = await inbox.database.selectFrom('rejected_deliveries').select(['remote_address', 'status_code', 'body_bytes']).execute();
    const listed = rows.find((row) => row.remote_address === '203.0.113.9');
    assert.ok(listed, JSON.stringify(rows));
    assert.equal(Number(listed.status_code), 401);
    assert.equal(Number(listed.body_bytes), Buffer.byteLength(forged.body));
  });

  test('every delivery answered over HTTP is recorded exactly once, its duplicate answered as one', async () => {
    const delivery = stripeDelivery(stripePaymentEvent('evt_l_twice', 'payment_intent.succeeded', 'pi_l_twice'));
    const answers = await Promise.all([overHttp(delivery), overHttp(delivery), overHttp(delivery)]);
    assert.deepEqual(
      answers.map((answer) => answer.status),
      [200, 200, 200],
    );
    assert.deepEqual(answers.map((answer) => answer.body.outcome).sort(), ['duplicate', 'duplicate', 'recorded']);
    const stored = await inbox.database.selectFrom('webhook_events').select('id').where('event_id', '=', 'evt_l_twice').execute();
    assert.equal(stored.length, 1);
  });
});
