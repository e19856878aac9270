import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findEvents } from '../../../src/ops/event-lookup.js';
import { paymentDetail } from '../../../src/ops/payment-detail.js';
import { cli } from '../../support/cli.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const databases = await createTestDatabases();

/** A user id as hostile as a payload may make it: an ANSI escape would recolour the operator's terminal. */
const HOSTILE_USER = 'u_story\u001b[31m';

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`operator listings: newest first, --payment, payments show (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let server: Harness;

    before(async () => {
      db = database as TestDatabase;
      server = await Harness.start(db.url);
      // One payment's story (created, captured, refunded), then another payment; one at a time, so
      // the row ids follow this order.
      const story: Array<[string, string, string]> = [
        ['evt_story_1', 'payment_intent.created', 'pi_story'],
        ['evt_story_2', 'payment_intent.succeeded', 'pi_story'],
        ['evt_story_3', 'charge.refunded', 'pi_story'],
        ['evt_other_1', 'payment_intent.succeeded', 'pi_other'],
      ];
      for (const [index, [eventId, type, paymentId]] of story.entries()) {
        const object = paymentId === 'pi_other' ? { receipt_email: 'other@example.com' } : {};
        assert.equal((await server.post(stripeDelivery(stripePaymentEvent(eventId, type, paymentId, { userId: HOSTILE_USER, courseId: `c_${paymentId}`, object })))).status, 200);
        await server.waitUntilProcessed(index + 1);
      }
      // The outbox rows are written at once; the dispatcher marks them skipped (no transport configured).
      await server.waitFor('the outbox rows final', async () => (await server.countRows('outbox', 'skipped')) === 5);
    });
    after(async () => {
      await server?.close();
      await db?.drop();
    });

    test('events are listed newest first; --payment keeps one payment', async () => {
      const ids = async (filter: Parameters<typeof findEvents>[1]) => (await findEvents(server.db, filter)).events.map((e) => e.event_id);
      assert.deepEqual(await ids({ limit: 50 }), ['evt_other_1', 'evt_story_3', 'evt_story_2', 'evt_story_1']);
      assert.deepEqual(await ids({ limit: 2 }), ['evt_other_1', 'evt_story_3'], 'a limit keeps the newest');
      assert.deepEqual(await ids({ paymentId: 'pi_story', limit: 50 }), ['evt_story_3', 'evt_story_2', 'evt_story_1']);
      assert.deepEqual(await ids({ paymentId: 'pi_story', provider: 'razorpay', limit: 50 }), []);
      // An access request: the events of every payment recorded with the payer's e-mail.
      assert.deepEqual(await ids({ email: 'other@example.com', limit: 50 }), ['evt_other_1']);
      assert.deepEqual(await ids({ email: 'buyer@example.com', limit: 50 }), ['evt_story_3', 'evt_story_2', 'evt_story_1']);
      assert.deepEqual(await ids({ email: 'buyer@example.com', provider: 'razorpay', limit: 50 }), []);
    });

    test('a payment: its state, its events in order, its order, enrollment and outbox rows', async () => {
      const detail = await paymentDetail(server.db, server.clock, server.inbox.domains, 'stripe', 'pi_story');
      assert.equal(detail.payment?.status, 'refunded');
      assert.deepEqual(
        detail.events.map((e) => [e.event_id, e.event_type, e.status]),
        [
          ['evt_story_1', 'payment_intent.created', 'processed'],
          ['evt_story_2', 'payment_intent.succeeded', 'processed'],
          ['evt_story_3', 'charge.refunded', 'processed'],
        ],
      );
      const [order, enrollments] = detail.sections;
      assert.deepEqual([order?.title, order?.records[0]?.find((field) => field.label === 'Status')?.value], ['Order', 'refunded']);
      assert.deepEqual(
        enrollments?.records.map((record) => record.filter((field) => ['User', 'Course', 'Status'].includes(field.label)).map((field) => field.value)),
        [[HOSTILE_USER, 'c_pi_story', 'revoked']],
      );
      assert.deepEqual(
        detail.outbox.map((row) => [row.idempotencyKey, row.status]),
        [
          ['receipt:stripe:pi_story', 'skipped'],
          ['fulfilment:stripe:pi_story', 'skipped'],
          ['fulfilment-cancel:stripe:pi_story', 'skipped'],
        ],
      );
      await assert.rejects(paymentDetail(server.db, server.clock, server.inbox.domains, 'stripe', 'pi_never_seen'), /no payment pi_never_seen from stripe/);
    });

    // The commands' wiring is the same over both stores: checked once.
    if (backend === 'mysql')
      test('the CLI: events list (table, --payment, --json), payments show (sections, --json, unknown payment)', async () => {
        const env = { DATABASE_URL: db.url };
        const [list, byPayment, show, showJson, unknown] = await Promise.all([
          cli(['events', 'list'], env),
          cli(['events', 'list', '--payment', 'pi_story', '--json'], env),
          cli(['payments', 'show', 'stripe', 'pi_story'], env),
          cli(['payments', 'show', 'stripe', 'pi_story', '--json'], env),
          cli(['payments', 'show', 'stripe', 'pi_never_seen'], env),
        ]);
        const byEmail = await cli(['events', 'list', '--email', 'other@example.com', '--json'], env);
        assert.equal(byEmail.code, 0, byEmail.output);
        assert.deepEqual(
          (JSON.parse(byEmail.output) as { events: Array<{ event_id: string }> }).events.map((e) => e.event_id),
          ['evt_other_1'],
        );
        assert.equal(list.code, 0, list.output);
        const lines = list.output.split('\n');
        assert.match(lines[0]!, /^ID +PROVIDER +EVENT ID +TYPE +PAYMENT +STATUS +ATTEMPTS +RECEIVED \(UTC\) +OUTCOME \/ LAST ERROR$/);
        assert.match(lines[1]!, /^\d+ +stripe +evt_other_1 +payment_intent\.succeeded +pi_other +processed /);

        assert.equal(byPayment.code, 0, byPayment.output);
        const listed = JSON.parse(byPayment.output) as { events: Array<{ event_id: string; payload?: unknown }>; more: boolean };
        assert.deepEqual(
          listed.events.map((e) => e.event_id),
          ['evt_story_3', 'evt_story_2', 'evt_story_1'],
        );
        assert.equal(listed.events[0]!.payload, undefined, 'no payload in a listing');

        assert.equal(show.code, 0, show.output);
        assert.match(show.output, /^payment: +stripe pi_story$/m);
        assert.match(show.output, /^status: +refunded$/m);
        assert.match(
          show.output,
          /^Events, in the order received:\nID +PROVIDER +EVENT ID +TYPE .*\n\d+ +stripe +evt_story_1 .*\n\d+ +stripe +evt_story_2 .*\n\d+ +stripe +evt_story_3 /m,
        );
        assert.match(show.output, /^Order:\nORDER +STATUS .*\n\d+ +refunded +4900 +USD /m);
        assert.match(show.output, /^Enrollments:\nENROLLMENT +USER +COURSE +STATUS .*\n\d+ +u_story\\u001b\[31m +c_pi_story +revoked /m);
        assert.match(show.output, /^Outbox:\nID +STATUS +KIND +KEY .*\n\d+ +skipped +receipt_email +receipt:stripe:pi_story /m);
        assert.ok(!show.output.includes('\u001b'), 'control characters from a payload are shown escaped, never sent to the terminal');

        assert.equal(showJson.code, 0, showJson.output);
        const detail = JSON.parse(showJson.output) as { payment: { status: string }; events: unknown[]; outbox: unknown[] };
        assert.deepEqual([detail.payment.status, detail.events.length, detail.outbox.length], ['refunded', 3, 3]);

        assert.equal(unknown.code, 1, unknown.output);
        assert.match(unknown.output, /^webhook-inbox: no payment pi_never_seen from stripe/);
      });
  });
}
