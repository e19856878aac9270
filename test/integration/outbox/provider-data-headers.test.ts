import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { startHttpDownstream, startSmtpServer, type HttpCall } from '../../support/downstream.js';
import { FORWARD_SECRETS, verifiedForwardedEvent } from '../../support/forwarded.js';
import { waitFor } from '../../support/harness.js';
import { razorpayDelivery, stripeDelivery, stripePaymentEvent, type SignedDelivery } from '../../support/signing.js';
import { describeEachService } from '../../support/store-suite.js';

/**
 * Payment ids a provider signs are the provider's to choose: outside Latin-1, with control characters,
 * CR/LF, markup, what looks like a percent escape. Each is recorded, processed, and its side effects
 * reach the fulfilment API, the mail server and the forwarding receiver, under a key that is the same
 * on every attempt.
 */
const PAYMENT_IDS = {
  nonLatin1: 'pi_ünïcødé_€_😀_支付',
  controls: 'pi_\r\nX-Injected: yes\t\u0001\u007f',
  markup: ' pi_<!channel> "quoted" %41 /path?q=1 ',
};

const fulfilment = await startHttpDownstream();
const forwarded = await startHttpDownstream('/webhooks/payments');
const smtp = await startSmtpServer();
after(async () => {
  await fulfilment.close();
  await forwarded.close();
  await smtp.close();
});

/** Every first fulfilment attempt of a payment fails, so that each key is seen on a retry too. */
const attempted = new Set<string>();
fulfilment.script = (call) => {
  const payment = `${String(call.body.provider)}:${String(call.body.paymentId)}`;
  if (attempted.has(payment)) return undefined;
  attempted.add(payment);
  return { status: 503 };
};

/** The key a receiver reads from the header: percent-decoded, it is the body's key. */
function headerKey(call: HttpCall): string {
  const header = call.headers['idempotency-key'];
  assert.equal(typeof header, 'string');
  assert.match(header as string, /^[\x21-\x7e]+$/, 'visible ASCII only');
  return decodeURIComponent(header as string);
}

function stripeCapture(eventId: string, paymentId: string, email: string): SignedDelivery {
  return stripeDelivery(stripePaymentEvent(eventId, 'payment_intent.succeeded', paymentId, { userId: 'u_weird', courseId: 'rust-101', object: { receipt_email: email } }));
}

function razorpayCapture(eventId: string, paymentId: string, email: string): SignedDelivery {
  const payment = { id: paymentId, entity: 'payment', amount: 50000, currency: 'INR', status: 'captured', email, notes: { user_id: 'u_weird', course_id: 'rust-101' } };
  return razorpayDelivery({ entity: 'event', event: 'payment.captured', contains: ['payment'], payload: { payment: { entity: payment } }, created_at: 1767225600 }, eventId);
}

await describeEachService(
  'a payment id no HTTP header can carry raw',
  {
    FULFILLMENT_URL: fulfilment.url,
    SMTP_URL: smtp.url,
    MAIL_FROM: 'Course Shop <receipts@shop.example>',
    FORWARD_URL: forwarded.url,
    FORWARD_SECRET: FORWARD_SECRETS.join(','),
    RETRY_BASE_SECONDS: '0.05',
    RETRY_MAX_SECONDS: '0.2',
    MAX_ATTEMPTS: '1000',
    SWEEP_INTERVAL_MS: '50',
  },
  (suite) => {
    test('is recorded (200), processed, fulfilled under one percent-encoded key on every attempt, mailed and forwarded', async () => {
      // Each store gets ids of its own: the downstreams are shared by the suites.
      const tag = `_${suite.backend}`;
      const deliveries = [
        ...Object.entries(PAYMENT_IDS).map(([name, id]) => {
          const email = `${name}${tag}@buyers.example`;
          return { provider: 'stripe', paymentId: id + tag, email, delivery: stripeCapture(`evt_${name}${tag}_ü€`, id + tag, email) };
        }),
        {
          provider: 'razorpay',
          paymentId: PAYMENT_IDS.nonLatin1 + tag,
          email: `razorpay${tag}@buyers.example`,
          delivery: razorpayCapture(`evt_rzp${tag}`, PAYMENT_IDS.nonLatin1 + tag, `razorpay${tag}@buyers.example`),
        },
      ];
      for (const { delivery } of deliveries) assert.equal((await suite.service.post(delivery)).status, 200);

      const db = suite.service.db;
      await waitFor('every side effect sent', async () => {
        const rows = await db.selectFrom('outbox').select(['status']).execute();
        return rows.length === deliveries.length * 3 && rows.every((row) => row.status === 'sent');
      });
      const events = await db.selectFrom('webhook_events').select(['status', 'outcome']).execute();
      assert.equal(events.length, deliveries.length);
      for (const event of events) assert.equal(event.status, 'processed', String(event.outcome));

      for (const { provider, paymentId, email } of deliveries) {
        const key = `fulfilment:${provider}:${paymentId}`;
        const calls = fulfilment.calls.filter((call) => call.body.provider === provider && call.body.paymentId === paymentId);
        assert.equal(calls.length, 2, `${JSON.stringify(paymentId)}: refused once, then done`);
        assert.deepEqual(
          calls.map((call) => call.headers['idempotency-key']),
          [calls[0]!.headers['idempotency-key'], calls[0]!.headers['idempotency-key']],
          'the same header on every attempt',
        );
        for (const call of calls) {
          assert.equal(headerKey(call), key);
          assert.equal(call.body.idempotencyKey, key, 'the body carries the key as it is');
          assert.equal(call.headers['x-injected'], undefined, 'no header smuggled in through CR/LF');
        }
        const [fulfilmentRow] = await db.selectFrom('outbox').select(['attempts']).where('idempotency_key', '=', key).execute();
        assert.equal(fulfilmentRow?.attempts, 2);

        assert.equal(smtp.accepted.filter((mail) => mail.to === email).length, 1, `one receipt for ${JSON.stringify(paymentId)}`);
        const sent = forwarded.calls
          .map((call) => verifiedForwardedEvent(call))
          .filter((event) => event.type === 'payment.captured' && event.data.provider === provider && event.data.payment_id === paymentId);
        assert.equal(sent.length, 1, `one forwarded event for ${JSON.stringify(paymentId)}`);
      }
    });
  },
);
