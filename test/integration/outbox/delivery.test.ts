import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { OutboxStore } from '../../../src/outbox/outbox-store.js';
import type { OutboxStatus } from '../../../src/db/schema.js';
import { toDbTime } from '../../../src/db/schema.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { startHttpDownstream, startSmtpServer, type HttpDownstream, type SmtpDownstream } from '../../support/downstream.js';
import { Harness, testConfig, waitFor } from '../../support/harness.js';
import { metricValue } from '../../support/metrics.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const databases = await createTestDatabases();
const databasesWithoutTransports = await createTestDatabases();
const MAIL_FROM = 'Course Shop <receipts@shop.example>';
const FULFILLMENT_TIMEOUT_MS = 300;

/** The Message-ID a receipt must carry, computed here independently of src/. */
function expectedMessageId(paymentId: string): string {
  return `<${Buffer.from(`receipt:stripe:${paymentId}`).toString('base64url')}@shop.example>`;
}

function capture(eventId: string, paymentId: string, options: { type?: string; amount?: number; courseId?: string } = {}) {
  return stripeDelivery(
    stripePaymentEvent(eventId, options.type ?? 'payment_intent.succeeded', paymentId, {
      userId: `u_${paymentId}`,
      courseId: options.courseId ?? 'rust-101',
      amount: options.amount ?? 4900,
      object: { receipt_email: `${paymentId}@buyers.example` },
    }),
  );
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`outbox delivery to real SMTP and HTTP servers (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let smtp: SmtpDownstream;
    let fulfilment: HttpDownstream;
    let server: Harness;
    let outbox: OutboxStore;

    before(async () => {
      db = database as TestDatabase;
      smtp = await startSmtpServer();
      fulfilment = await startHttpDownstream();
      server = await Harness.start(db.url, {
        SMTP_URL: smtp.url,
        MAIL_FROM,
        FULFILLMENT_URL: fulfilment.url,
        FULFILLMENT_TIMEOUT_MS: String(FULFILLMENT_TIMEOUT_MS),
        RETRY_BASE_SECONDS: '0.05',
        RETRY_MAX_SECONDS: '0.2',
        // Fast retries must not run out while a test holds the downstream back on a busy machine.
        MAX_ATTEMPTS: '1000',
        SWEEP_INTERVAL_MS: '50',
      });
      outbox = new OutboxStore(server.db, server.clock);
    });
    after(async () => {
      await server?.close();
      await smtp?.close();
      await fulfilment?.close();
      await db?.drop();
    });

    async function rowsOf(paymentId: string) {
      return server.db.selectFrom('outbox').selectAll().where('idempotency_key', 'like', `%:stripe:${paymentId}`).orderBy('id').execute();
    }

    async function waitForRows(description: string, paymentIds: string[], rows: number, status: OutboxStatus = 'sent') {
      await waitFor(description, async () => {
        const all = (await Promise.all(paymentIds.map(rowsOf))).flat();
        return all.length === rows && all.every((row) => row.status === status);
      });
    }

    const callsFor = (prefix: string) => fulfilment.calls.filter((c) => String(c.body.paymentId).startsWith(prefix));

    test('one receipt per captured payment across duplicate deliveries and two event ids; a 451 is retried', async () => {
      const payments = ['pi_mail_0', 'pi_mail_1', 'pi_mail_2', 'pi_mail_3'];
      smtp.verdict = (_mail, index) => (index === 0 ? { reject: 451 } : 'accept');
      const deliveries = payments.flatMap((paymentId, i) => {
        const succeeded = capture(`evt_pi_${paymentId}`, paymentId, { amount: 4900 + i });
        return [succeeded, succeeded, succeeded, capture(`evt_ch_${paymentId}`, paymentId, { type: 'charge.succeeded', amount: 4900 + i })];
      });
      const responses = await Promise.all(deliveries.map((delivery) => server.post(delivery)));
      assert.ok(responses.every((r) => r.status === 200));
      await waitForRows('receipts and fulfilments sent', payments, payments.length * 2);
      await sleep(300); // several dispatcher polls: nothing else may arrive

      assert.equal(smtp.accepted.length, payments.length, 'exactly one accepted receipt per payment');
      assert.equal(smtp.received.length, payments.length + 1, 'plus the attempt refused with 451');
      assert.equal(smtp.received[0]!.messageId, smtp.received.find((m, i) => i > 0 && m.to === smtp.received[0]!.to)?.messageId, 'the retry reuses the Message-ID');
      assert.ok(smtp.logins.length > 0, 'authenticated with the SMTP_URL credentials');
      for (const [i, paymentId] of payments.entries()) {
        const mails = smtp.accepted.filter((m) => m.to === `${paymentId}@buyers.example`);
        assert.equal(mails.length, 1, paymentId);
        const mail = mails[0]!;
        assert.equal(mail.messageId, expectedMessageId(paymentId));
        assert.equal(mail.from, '"Course Shop" <receipts@shop.example>');
        assert.equal(mail.subject, 'Your receipt for rust-101');
        for (const body of [mail.text, mail.html]) {
          assert.ok(body.includes('rust-101') && body.includes(paymentId), body);
          assert.match(body, new RegExp(`USD\\s49\\.0${i}`));
        }
      }
      const [receipt] = (await rowsOf('pi_mail_0')).filter((row) => row.kind === 'receipt_email');
      assert.match(receipt!.outcome ?? '', /^sent: 250/);
    });

    test('fulfilment: the first calls fail and one times out; every payment fulfilled, one key per payment, retries reuse it', async () => {
      const payments = ['pi_ful_0', 'pi_ful_1', 'pi_ful_2', 'pi_ful_3', 'pi_ful_4'];
      const failures = [{ status: 500 }, { status: 429, headers: { 'retry-after': '0' } }, { status: 503 }, 'hang' as const];
      let seen = 0;
      fulfilment.script = (call) => (String(call.body.paymentId).startsWith('pi_ful_') ? failures[seen++] : undefined);
      await Promise.all(payments.map((paymentId) => server.post(capture(`evt_${paymentId}`, paymentId))));
      await waitForRows('all fulfilments sent', payments, payments.length * 2);

      const calls = callsFor('pi_ful_');
      const keys = new Set(calls.map((c) => c.key));
      assert.deepEqual(
        [...keys].sort(),
        payments.map((p) => `fulfilment:stripe:${p}`),
      );
      assert.equal(calls.length, payments.length + failures.length, 'each failed call was retried once');
      for (const call of calls) {
        assert.equal(call.body.idempotencyKey, call.key);
        assert.equal(call.key, `fulfilment:stripe:${String(call.body.paymentId)}`, 'the key is derived from the payment');
        assert.equal(call.body.action, 'fulfil');
        assert.equal(call.body.courseId, 'rust-101');
      }
      for (const key of keys) assert.ok(fulfilment.done.has(key!), `${key} fulfilled`);
      const rows = (await Promise.all(payments.map(rowsOf))).flat().filter((row) => row.kind === 'fulfilment');
      assert.equal(
        rows.reduce((sum, row) => sum + row.attempts, 0),
        calls.length,
        'one attempt per call',
      );
      assert.equal(rows.filter((row) => row.outcome?.startsWith('already done: HTTP 409')).length, 1, 'the timed-out call had done the work: 409 on retry');
      console.log(
        `${backend}: fulfilment saw ${calls.length} calls for ${payments.length} payments (${failures.length} failed or timed out and were retried), ${keys.size} distinct keys`,
      );
    });

    test('a refund after capture sends no second receipt and a separately keyed cancellation, after the fulfilment', async () => {
      const paymentId = 'pi_refund';
      let released = false;
      fulfilment.script = (call) => (call.body.paymentId === paymentId && call.body.action === 'fulfil' && !released ? { status: 503 } : undefined);
      await server.post(capture('evt_refund_capture', paymentId));
      await waitFor('the fulfilment attempted', () => callsFor(paymentId).length > 0);
      await server.post(stripeDelivery(stripePaymentEvent('evt_refund', 'charge.refunded', paymentId, { userId: `u_${paymentId}`, courseId: 'rust-101' })));
      await waitFor('the cancellation written', async () => (await rowsOf(paymentId)).some((row) => row.kind === 'fulfilment_cancellation'));
      await sleep(200);
      assert.ok(!callsFor(paymentId).some((c) => c.body.action === 'cancel'), 'no cancellation while the fulfilment is unfinished');
      released = true;
      await waitForRows('receipt, fulfilment and cancellation sent', [paymentId], 3);

      const calls = callsFor(paymentId);
      const lastFulfil = calls.findLastIndex((c) => c.body.action === 'fulfil');
      const cancels = calls.filter((c) => c.body.action === 'cancel');
      assert.equal(cancels.length, 1);
      assert.ok(calls.indexOf(cancels[0]!) > lastFulfil, 'cancelled after it was fulfilled');
      assert.equal(cancels[0]!.key, `fulfilment-cancel:stripe:${paymentId}`);
      assert.notEqual(cancels[0]!.key, calls[lastFulfil]!.key);
      assert.equal(smtp.accepted.filter((m) => m.to === `${paymentId}@buyers.example`).length, 1, 'no second receipt');
      assert.deepEqual(
        (await rowsOf(paymentId)).map((row) => row.kind),
        ['receipt_email', 'fulfilment', 'fulfilment_cancellation'],
      );
    });

    test('another 4xx is a permanent failure recorded with the response; an operator retry sends the same key again', async () => {
      const paymentId = 'pi_rejected';
      fulfilment.script = (call) =>
        call.body.paymentId === paymentId && fulfilment.calls.filter((c) => c.body.paymentId === paymentId).length === 1
          ? { status: 422, body: { error: 'unknown course' } }
          : undefined;
      await server.post(capture('evt_rejected', paymentId, { courseId: 'retired-course' }));
      await waitFor('the fulfilment failed', async () => (await rowsOf(paymentId)).some((row) => row.kind === 'fulfilment' && row.status === 'failed'));
      const failed = (await rowsOf(paymentId)).find((row) => row.kind === 'fulfilment')!;
      assert.equal(failed.attempts, 1, 'no automatic retry');
      assert.equal(failed.last_error, 'HTTP 422: {"error":"unknown course"}');
      assert.equal(failed.next_attempt_at, null);
      const scraped = await fetch(`${server.url}/metrics`).then((r) => r.text());
      assert.equal(metricValue(scraped, 'webhook_inbox_outbox_messages', { status: 'failed' }), 1, 'the failed row shows in the metrics');

      assert.equal(await outbox.retry({ id: failed.id }), 1);
      await waitForRows('sent after the operator retry', [paymentId], 2);
      assert.deepEqual(
        callsFor(paymentId).map((c) => c.key),
        [`fulfilment:stripe:${paymentId}`, `fulfilment:stripe:${paymentId}`],
      );
    });

    test('a receipt for a payment without an e-mail address is skipped, saying why', async () => {
      const now = toDbTime(server.clock.now());
      const payload = JSON.stringify({ provider: 'stripe', paymentId: 'pi_no_email', courseId: 'rust-101', amount: 4900, currency: 'USD', email: null });
      await server.db
        .insertInto('outbox')
        .values({ idempotency_key: 'receipt:stripe:pi_no_email', kind: 'receipt_email', payload, status: 'pending', attempts: 0, next_attempt_at: now, created_at: now })
        .execute();
      await waitForRows('the receipt skipped', ['pi_no_email'], 1, 'skipped');
      assert.equal((await rowsOf('pi_no_email'))[0]!.outcome, 'skipped: the payment has no customer e-mail address');
    });

    test('delivery rate against the local servers (logged, not asserted)', async () => {
      fulfilment.script = () => undefined;
      smtp.verdict = () => 'accept';
      const rows = 60;
      const now = toDbTime(server.clock.now());
      const before = { mails: smtp.accepted.length, calls: fulfilment.calls.length };
      const started = performance.now();
      await server.db
        .insertInto('outbox')
        .values(
          Array.from({ length: rows }, (_, i) => ({
            idempotency_key: `bench:${i}`,
            kind: i % 2 === 0 ? 'receipt_email' : 'fulfilment',
            payload: JSON.stringify({ provider: 'stripe', paymentId: `pi_bench_${i}`, courseId: 'rust-101', amount: 4900, currency: 'USD', email: `bench${i}@buyers.example` }),
            status: 'pending' as const,
            attempts: 0,
            next_attempt_at: now,
            created_at: now,
          })),
        )
        .execute();
      await waitFor(
        'bench rows sent',
        async () => (await server.db.selectFrom('outbox').select('id').where('idempotency_key', 'like', 'bench:%').where('status', '=', 'sent').execute()).length === rows,
      );
      const seconds = (performance.now() - started) / 1000;
      assert.equal(smtp.accepted.length - before.mails + fulfilment.calls.length - before.calls, rows, 'one delivery per row');
      console.log(`${backend}: dispatcher delivered ${rows} rows (SMTP + HTTP, concurrency 4) in ${seconds.toFixed(2)} s = ${(rows / seconds).toFixed(0)} deliveries/s`);
    });
  });

  describe(`outbox without transports (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let server: Harness;
    const logLines: string[] = [];

    before(async () => {
      db = databasesWithoutTransports[backend] as TestDatabase;
      const logger = pino({ level: 'info' }, new Writable({ write: (chunk: Buffer, _encoding, done) => (logLines.push(chunk.toString()), done()) }));
      server = await Harness.start(db.url, { SWEEP_INTERVAL_MS: '50' }, { logger });
    });
    after(async () => {
      await server?.close();
      await db?.drop();
    });

    test('neither SMTP nor fulfilment configured: every side effect is written skipped with its reason, not dropped, and no dispatcher touches it', async () => {
      const lines = () => logLines.map((line) => JSON.parse(line) as { level: number; msg: string; kind?: string; idempotencyKey?: string });
      await server.post(capture('evt_skip', 'pi_skip'));
      await waitFor('both rows written', async () => (await server.db.selectFrom('outbox').select('id').execute()).length === 2);
      // Written final by the processing transaction: never pending, never claimed, no attempt.
      const rows = await server.db
        .selectFrom('outbox')
        .select(['kind', 'status', 'outcome', 'attempts', 'next_attempt_at', 'lease_owner', 'idempotency_key'])
        .orderBy('kind')
        .execute();
      assert.deepEqual(rows, [
        {
          kind: 'fulfilment',
          status: 'skipped',
          outcome: 'skipped: FULFILLMENT_URL is not set',
          attempts: 0,
          next_attempt_at: null,
          lease_owner: null,
          idempotency_key: 'fulfilment:stripe:pi_skip',
        },
        {
          kind: 'receipt_email',
          status: 'skipped',
          outcome: 'skipped: SMTP_URL is not set',
          attempts: 0,
          next_attempt_at: null,
          lease_owner: null,
          idempotency_key: 'receipt:stripe:pi_skip',
        },
      ]);
      // The warning comes once per kind, at start, naming the setting; no line per row.
      const warnings = lines().filter((line) => line.level === pino.levels.values.warn && line.msg.includes('rows are marked skipped'));
      assert.deepEqual(warnings.map((line) => [line.kind, /(\w+_URL) is not set/.exec(line.msg)?.[1]]).sort(), [
        ['fulfilment', 'FULFILLMENT_URL'],
        ['fulfilment_cancellation', 'FULFILLMENT_URL'],
        ['receipt_email', 'SMTP_URL'],
      ]);
      assert.equal(lines().filter((line) => line.msg === 'outbox message skipped').length, 0);
    });

    test('a kind without a transport, and a row whose holders kept dying, fail for an operator', async () => {
      const now = server.clock.now();
      const { maxAttempts } = testConfig(db.url).processing;
      await server.db
        .insertInto('outbox')
        .values([
          { idempotency_key: 'mystery:1', kind: 'mystery', payload: '{}', status: 'pending', attempts: 0, next_attempt_at: toDbTime(now), created_at: toDbTime(now) },
          // Leased MAX_ATTEMPTS times already, by dispatchers that died before any verdict.
          {
            idempotency_key: 'fulfilment:stripe:pi_doomed',
            kind: 'fulfilment',
            payload: '{}',
            status: 'sending',
            attempts: maxAttempts,
            next_attempt_at: toDbTime(new Date(now.getTime() - 1)),
            created_at: toDbTime(now),
          },
        ])
        .execute();
      await waitFor('both rows failed', async () => (await server.db.selectFrom('outbox').select('id').where('status', '=', 'failed').execute()).length === 2);
      const rows = await server.db
        .selectFrom('outbox')
        .select(['idempotency_key', 'last_error', 'next_attempt_at'])
        .where('status', '=', 'failed')
        .orderBy('idempotency_key')
        .execute();
      assert.deepEqual(rows, [
        { idempotency_key: 'fulfilment:stripe:pi_doomed', last_error: `gave up after ${maxAttempts} attempts without completion`, next_attempt_at: null },
        { idempotency_key: 'mystery:1', last_error: 'no transport for outbox kind "mystery"', next_attempt_at: null },
      ]);
    });
  });
}
