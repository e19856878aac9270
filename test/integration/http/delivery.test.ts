import assert from 'node:assert/strict';
import { test } from 'node:test';
import { samples } from '../../support/fixtures.js';
import { payuDelivery, razorpayDelivery, stripeDelivery, stripePaymentEvent, type Delivery } from '../../support/signing.js';
import { describeEachService } from '../../support/store-suite.js';
import { selectEventRows } from '../../../src/db/event-rows.js';

await describeEachService(`signed deliveries from each provider, over HTTP`, {}, (suite) => {
  async function deliverAndProcess(delivery: Delivery, eventId: string): Promise<string | null> {
    const response = await suite.service.post(delivery);
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.equal(response.body.outcome, 'recorded');
    assert.equal(response.body.eventId, eventId);
    let outcome: string | null = null;
    await suite.service.waitFor(`${eventId} processed`, async () => {
      const state = await suite.service.inbox.store.findEvent(delivery.provider, eventId);
      outcome = state?.status === 'processed' ? state.outcome : null;
      return outcome !== null;
    });
    return outcome;
  }

  test('every Stripe sample payload, byte for byte as pretty-printed on disk', async () => {
    for (const sample of samples('stripe', '.json')) {
      const event = JSON.parse(sample.text) as { id: string; type: string };
      const outcome = await deliverAndProcess(stripeDelivery(sample.text), event.id);
      if (event.type === 'charge.dispute.created') assert.match(outcome!, /^ignored: no business meaning/);
      else assert.match(outcome!, /^(applied|ignored): payment/, `${sample.name}: ${outcome}`);
    }
    const stored = await selectEventRows(suite.service.db).where('provider', '=', 'stripe').execute();
    for (const sample of samples('stripe', '.json')) {
      const id = (JSON.parse(sample.text) as { id: string }).id;
      assert.equal(stored.find((row) => row.event_id === id)?.payload, sample.text, `${sample.name} stored verbatim`);
    }
    const payment = await suite.service.db.selectFrom('payments').selectAll().where('payment_id', '=', 'pi_3QxA1bB7WZ01zgkW0aBcDeFg').executeTakeFirstOrThrow();
    assert.equal(payment.status, 'refunded', 'the samples include charge.refunded (full), the highest state');
  });

  test('every Razorpay docs sample, with the event id from X-Razorpay-Event-Id', async () => {
    let n = 0;
    for (const sample of samples('razorpay', '.json')) {
      const eventId = `rzp_evt_${String(++n).padStart(4, '0')}`;
      const outcome = await deliverAndProcess(razorpayDelivery(JSON.stringify(JSON.parse(sample.text)), eventId), eventId);
      assert.ok(outcome, sample.name);
    }
    const captured = await suite.service.db.selectFrom('payments').select('status').where('payment_id', '=', 'pay_DESp9bgForNoUd').executeTakeFirstOrThrow();
    assert.equal(captured.status, 'captured');
  });

  test('every constructed PayU form post (hashes made by the PayU SDK), idempotency key txnid:status', async () => {
    for (const sample of samples('payu', '.form-urlencoded.txt')) {
      const fields = new URLSearchParams(sample.text);
      const eventId = `${fields.get('txnid')!.trim()}:${fields.get('status')}`;
      const delivery: Delivery = { provider: 'payu', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: sample.text };
      const outcome = await deliverAndProcess(delivery, eventId);
      assert.match(outcome!, /payment/, sample.name);
    }
    const payment = await suite.service.db.selectFrom('payments').selectAll().where('provider', '=', 'payu').where('payment_id', '=', 'ORD000123A1').executeTakeFirstOrThrow();
    assert.equal(payment.status, 'captured');
    assert.equal(payment.amount, 150000);
    assert.equal(payment.currency, 'INR');
  });

  test('a PayU JSON post verifies like the form post', async () => {
    const form = payuDelivery({
      mihpayid: '9000001',
      status: 'success',
      txnid: 'T9000001',
      amount: '10.00',
      productinfo: 'Course',
      firstname: 'A',
      email: 'a@example.com',
      udf1: 'user_json',
      udf2: 'course_json',
    });
    const json: Delivery = { provider: 'payu', headers: { 'content-type': 'application/json' }, body: JSON.stringify(Object.fromEntries(new URLSearchParams(form.body))) };
    assert.match((await deliverAndProcess(json, 'T9000001:success'))!, /^applied: payment T9000001 captured/);
    const enrollment = await suite.service.courseDb.selectFrom('enrollments').selectAll().where('user_id', '=', 'user_json').executeTakeFirstOrThrow();
    assert.equal(enrollment.status, 'active');
  });

  test('a sequential duplicate is answered 200 and changes nothing', async () => {
    const delivery = stripeDelivery(stripePaymentEvent('evt_seq_dup', 'payment_intent.succeeded', 'pi_seq_dup', { userId: 'u_seq', courseId: 'c_seq' }));
    await deliverAndProcess(delivery, 'evt_seq_dup');
    const before = await suite.service.allCounts();

    const again = await suite.service.post(stripeDelivery(stripePaymentEvent('evt_seq_dup', 'payment_intent.succeeded', 'pi_seq_dup', { userId: 'u_seq', courseId: 'c_seq' })));
    assert.equal(again.status, 200);
    assert.equal(again.body.outcome, 'duplicate');
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.deepEqual(await suite.service.allCounts(), before);
    const state = await suite.service.inbox.store.findEvent('stripe', 'evt_seq_dup');
    assert.equal(state?.attempts, 1);
    const orders = await suite.service.courseDb.selectFrom('orders').selectAll().where('payment_id', '=', 'pi_seq_dup').execute();
    assert.equal(orders.length, 1);
  });

  test('event ids differing only in letter case are different events', async () => {
    await deliverAndProcess(stripeDelivery(stripePaymentEvent('evt_CaseX', 'payment_intent.created', 'pi_case_1')), 'evt_CaseX');
    await deliverAndProcess(stripeDelivery(stripePaymentEvent('evt_casex', 'payment_intent.created', 'pi_case_2')), 'evt_casex');
    const rows = await suite.service.db.selectFrom('webhook_events').select('event_id').where('event_id', 'in', ['evt_CaseX', 'evt_casex']).execute();
    assert.equal(rows.length, 2);
  });
});
