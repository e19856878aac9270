import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { ADMIN, ADMIN_ENV, HOSTILE } from '../../support/admin.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness } from '../../support/harness.js';
import { HOSTILE_PAYMENT_ID, insertListedPayments, LISTED_NEWEST_FIRST } from '../../support/payment-fixtures.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const databases = await createTestDatabases();

/** The payment a delivery makes, processed: newer than every listed one. */
const DELIVERED = 'pi_pd_1';
const ALL = [DELIVERED, ...LISTED_NEWEST_FIRST];

interface Answer {
  status: number;
  text: string;
  json: Record<string, unknown>;
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`admin payments list and detail (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let service: Harness;

    const get = async (path: string): Promise<Answer> => {
      const response = await fetch(`${service.url}${path}`, { headers: { authorization: `Bearer ${ADMIN.viewer}` } });
      const text = await response.text();
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // A page, not JSON.
      }
      return { status: response.status, text, json };
    };
    const listed = async (query: string): Promise<string[]> => {
      const answer = await get(`/admin/api/payments?${query}`);
      assert.equal(answer.status, 200, `${query}: ${answer.text}`);
      return (answer.json.payments as Array<{ paymentId: string }>).map((p) => p.paymentId);
    };

    before(async () => {
      db = database as TestDatabase;
      service = await Harness.start(db.url, ADMIN_ENV);
      await insertListedPayments(service.db);
      const object = { metadata: { user_id: 'u_1', course_id: 'c_1', note: HOSTILE.note } };
      const answer = await service.post(stripeDelivery(stripePaymentEvent('evt_pd_1', 'payment_intent.succeeded', DELIVERED, { object })));
      assert.equal(answer.status, 200);
      await service.waitUntilProcessed(1);
    });
    after(async () => {
      await service?.close();
      await db?.drop();
    });

    test('the list: newest first by update, exactly the documented fields, keyset pages through equal times that cover each payment once', async () => {
      const first = await get('/admin/api/payments');
      assert.deepEqual(Object.keys(first.json), ['payments', 'nextCursor']);
      assert.equal(first.json.nextCursor, null);
      const payments = first.json.payments as Array<Record<string, unknown>>;
      assert.deepEqual(
        payments.map((p) => p.paymentId),
        ALL,
      );
      assert.deepEqual(payments[1], { provider: 'stripe', paymentId: 'pi_pl_a', status: 'captured', amount: 4900, currency: 'USD', updatedAt: '2020-03-02T09:00:00.000Z' });
      assert.deepEqual(payments.at(-1), { provider: 'stripe', paymentId: 'pi_pl_e', status: 'created', amount: null, currency: null, updatedAt: '2020-03-01T09:00:00.000Z' });

      for (const [limit, query] of [
        [1, ''],
        [2, ''],
        [3, ''],
        [2, 'provider=stripe&'],
      ] as const) {
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const page: Answer = await get(`/admin/api/payments?${query}limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`);
          assert.equal(page.status, 200, page.text);
          const ids = (page.json.payments as Array<{ paymentId: string }>).map((p) => p.paymentId);
          assert.ok(ids.length <= limit);
          seen.push(...ids);
          cursor = page.json.nextCursor as string | null;
        } while (cursor);
        assert.deepEqual(seen, await listed(query), `limit ${limit} ${query}: the pages, in turn, are the whole list`);
      }
    });

    test('filters: provider, status, updated from and to, and q (exactly the e-mail or a metadata value)', async () => {
      assert.deepEqual(await listed('provider=razorpay'), ['pay_pl_c']);
      assert.deepEqual(await listed('provider=payu'), ['txn_pl_d']);
      assert.deepEqual(await listed('status=refunded'), ['pi_pl_b']);
      assert.deepEqual(await listed('status=captured'), [DELIVERED, 'pi_pl_a', 'pay_pl_c', 'pi_pl_f']);
      assert.deepEqual(await listed('provider=stripe&status=captured'), [DELIVERED, 'pi_pl_a', 'pi_pl_f']);
      assert.deepEqual(await listed('from=2020-03-01T11:00:00Z&to=2020-03-02'), ['txn_pl_d', 'pay_pl_c', 'pi_pl_b'], 'from is inclusive');
      assert.deepEqual(await listed('to=2020-03-01T11:00:00Z'), [HOSTILE_PAYMENT_ID, 'pi_pl_f', 'pi_pl_e'], 'to is exclusive');
      assert.deepEqual(await listed('from=2021-01-01'), [DELIVERED]);

      // The listed payments were updated in March 2020: a search of them names a window around it.
      const in2020 = (q: string) => listed(`q=${encodeURIComponent(q)}&from=2020-02-01&to=2020-04-01`);
      assert.deepEqual(await in2020('alice@example.com'), ['pi_pl_a', 'txn_pl_d'], 'the e-mail, or a metadata value; case counts');
      assert.deepEqual(await in2020('Alice@Example.com'), ['pay_pl_c']);
      assert.deepEqual(await in2020('o-1'), ['pi_pl_a', 'pi_pl_e'], 'a whole value, not O-1');
      assert.deepEqual(await in2020('say "hi"'), ['pi_pl_f']);
      for (const none of ['order_id', 'o-', 'alice', '%', '_', 'say', 'example.com']) assert.deepEqual(await in2020(none), [], `q=${none}: a key or part of a value is no match`);
      assert.deepEqual(await listed('q=o-1&provider=stripe&status=created&from=2020-02-01&to=2020-04-01'), ['pi_pl_e']);
      assert.deepEqual(await listed('q=o-1&to=2020-04-01'), ['pi_pl_a'], 'from: 30 days before to, March 2 (not March 1)');
      assert.deepEqual(await listed('q=o-1&to=2020-04-02'), [], 'from: March 3');

      // Without from and to, the last 30 days: the delivered payment only.
      assert.deepEqual(await listed(`q=${encodeURIComponent(HOSTILE.note)}`), [DELIVERED]);
      assert.deepEqual(await listed('q=c_1'), [DELIVERED]);
      // An access request: the payer's e-mail exactly, at any time (no window), as stored (case kept).
      assert.deepEqual(await listed('email=bob@example.com'), ['pi_pl_b']);
      assert.deepEqual(await listed('email=Alice@Example.com'), ['pay_pl_c']);
      assert.deepEqual(await listed('email=nobody@example.com'), []);
      const page = await get('/admin/payments?email=bob@example.com');
      assert.equal(page.status, 200);
      assert.match(page.text, /pi_pl_b/);
      assert.match(page.text, /name="email" value="bob@example.com"/);
      assert.deepEqual(await listed('q=o-1'), []);
    });

    test('bad parameters: 400 naming the parameter', async () => {
      const cases: Array<[string, string]> = [
        ['status=bogus', 'status'],
        ['status=processed', 'status'],
        ['provider=paypal', 'provider'],
        ['limit=0', 'limit'],
        ['limit=201', 'limit'],
        ['limit=abc', 'limit'],
        ['from=yesterday', 'from'],
        ['to=2026-13-45', 'to'],
        ['from=2020-03-02&to=2020-03-01', 'to'],
        ['cursor=garbage', 'cursor'],
        [`q=${'x'.repeat(201)}`, 'q'],
        ['q=o-1&from=2020-01-01&to=2020-04-01', 'q'],
        ['q=o-1&from=2020-01-01', 'q'],
        ['provider=stripe&provider=payu', 'provider'],
      ];
      for (const [query, parameter] of cases) {
        const answer = await get(`/admin/api/payments?${query}`);
        assert.equal(answer.status, 400, query);
        assert.match(String(answer.json.message), new RegExp(`(^|/)${parameter}\\b`), query);
        const page = await get(`/admin/payments?${query}`);
        assert.equal(page.status, 400, `the page: ${query}`);
        assert.match(page.text, new RegExp(`<p class="error">${parameter}: `), `the page: ${query}`);
      }
    });

    test('the detail: the payment named as in the list, its events as the event list names them, its order and enrollments readable', async () => {
      const answer = await get(`/admin/api/payments/stripe/${DELIVERED}`);
      assert.equal(answer.status, 200, answer.text);
      type Row = Record<string, unknown>;
      interface Section {
        domain: string;
        title: string;
        layout: string;
        records: Array<Array<{ label: string; value: unknown }>>;
      }
      const detail = answer.json as { payment: Row; events: Row[]; sections: Section[]; outbox: Row[] };
      assert.deepEqual(Object.keys(detail), ['provider', 'paymentId', 'payment', 'events', 'moreEvents', 'sections', 'outbox']);
      const { updatedAt, createdAt, ...payment } = detail.payment;
      assert.deepEqual(payment, {
        provider: 'stripe',
        paymentId: DELIVERED,
        status: 'captured',
        amount: 4900,
        currency: 'USD',
        email: 'buyer@example.com',
        metadata: { user_id: 'u_1', course_id: 'c_1', note: HOSTILE.note },
      });
      assert.match(String(updatedAt), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      assert.equal(createdAt, updatedAt, 'one event made it');
      assert.deepEqual(
        detail.events.map((e) => [e.eventId, e.type, e.status, e.paymentId]),
        [['evt_pd_1', 'payment_intent.succeeded', 'processed', DELIVERED]],
      );
      assert.deepEqual(Object.keys(detail.events[0]!), [
        'id',
        'provider',
        'eventId',
        'type',
        'status',
        'paymentId',
        'receivedAt',
        'attempts',
        'processedAt',
        'lastError',
        'outcome',
        'outcomeDetail',
      ]);
      // The course platform's rows, as it describes them: titled sections of labelled values.
      assert.deepEqual(
        detail.sections.map(({ domain, title, layout, records }) => [domain, title, layout, records.length]),
        [
          ['course-platform', 'Order', 'fields', 1],
          ['course-platform', 'Enrollments', 'table', 1],
        ],
      );
      const [order, enrollments] = detail.sections;
      assert.deepEqual(
        order!.records[0]!.map((field) => field.label),
        ['Order', 'Status', 'Amount (minor units)', 'Currency', 'User', 'Course', 'Created (UTC)', 'Updated (UTC)'],
      );
      assert.deepEqual(
        enrollments!.records.map((record) => record.filter((field) => ['User', 'Course', 'Status'].includes(field.label)).map((field) => field.value)),
        [['u_1', 'c_1', 'active']],
      );
      assert.ok(detail.outbox.length >= 1, 'its receipt and fulfilment request');
      const { metadata: _merchantKeys, ...named } = detail.payment;
      assert.doesNotMatch(JSON.stringify({ ...detail, payment: named }), /"[a-z]+_[a-z_]+":/, 'no column name in any section');

      const listedOnly = (await get('/admin/api/payments/stripe/pi_pl_f')).json;
      assert.deepEqual((listedOnly.payment as { metadata: unknown }).metadata, { greeting: 'say "hi"' });
      assert.deepEqual([listedOnly.events, (listedOnly.sections as Section[]).map((section) => section.records)], [[], [[], []]]);
      assert.equal((await get(`/admin/api/payments/stripe/${encodeURIComponent(HOSTILE_PAYMENT_ID)}`)).status, 200);

      const event = (await get('/admin/api/events?eventId=evt_pd_1')).json.events as Array<{ id: number }>;
      const view = (await get(`/admin/api/events/${event[0]!.id}`)).json;
      assert.equal((view.payment as { paymentId: string }).paymentId, DELIVERED, "the event detail's payment is named the same way");
    });

    test('the page: a filter form, rows linked to their payment, the next page, beside Events in the navigation; hostile strings escaped', async () => {
      const page = await get('/admin/payments?limit=4');
      assert.equal(page.status, 200, page.text);
      assert.match(page.text, /<a href="\/admin\/events">Events<\/a><a href="\/admin\/payments">Payments<\/a>/);
      for (const name of ['provider', 'status', 'from', 'to', 'q']) assert.match(page.text, new RegExp(`name="${name}"`), name);
      assert.match(page.text, /<a href="\/admin\/payments\/stripe\/pi_pd_1">pi_pd_1<\/a>/);
      assert.match(page.text, /<a href="\/admin\/payments\/payu\/txn_pl_d">txn_pl_d<\/a>/);
      const next = /<a href="([^"]+)">Older payments →<\/a>/.exec(page.text)?.[1]?.replaceAll('&amp;', '&');
      assert.ok(next, 'a link to the next page');
      const second = await get(next);
      assert.equal(second.status, 200);
      assert.match(second.text, /pi_pl_b/);
      assert.doesNotMatch(second.text, /pi_pl_a/, 'the second page starts where the first ended');

      const hostile = await get(`/admin/payments?from=2020-01-01&to=2020-03-01T10:00:00Z&q=${encodeURIComponent('"><script>x</script>')}`);
      assert.equal(hostile.status, 200);
      assert.match(hostile.text, /value="&quot;&gt;&lt;script&gt;x&lt;\/script&gt;"/, 'the filter, shown back as text');
      const withHostile = await get('/admin/payments?to=2020-03-01T10:00:00Z');
      assert.ok(withHostile.text.includes(`href="/admin/payments/stripe/${encodeURIComponent(HOSTILE_PAYMENT_ID)}"`), 'the link is its own page, encoded');
      assert.ok(withHostile.text.includes('pi_pl_&lt;img src=x onerror=&quot;window.__pwned = 4&quot;&gt;'));
      assert.doesNotMatch(withHostile.text, /<img/);

      const detail = await get(`/admin/payments/stripe/${DELIVERED}`);
      assert.equal(detail.status, 200);
      assert.ok(detail.text.includes('&lt;img src=x onerror=&quot;window.__pwned = 2&quot;&gt;'), 'metadata as text');
      assert.doesNotMatch(detail.text, /<img|<script>window/);
      const listedDetail = await get('/admin/payments/stripe/pi_pl_a');
      assert.ok(listedDetail.text.includes('&lt;script&gt;window.__pwned = 5&lt;/script&gt;'));
      assert.doesNotMatch(listedDetail.text, /<script>window/);
    });

    test('OpenAPI describes the list with its parameters', async () => {
      const openapi = (await get('/admin/api/openapi.json')).json as { paths: Record<string, { get?: { parameters?: Array<{ name: string }> } }> };
      const parameters = openapi.paths['/admin/api/payments']?.get?.parameters?.map((p) => p.name);
      assert.deepEqual(parameters, ['provider', 'status', 'email', 'from', 'to', 'q', 'limit', 'cursor']);
    });
  });
}
