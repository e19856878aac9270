import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { EventApplier } from '../../../src/domain/applier.js';
import type { EventOutcome } from '../../../src/model/outcome.js';
import { eventDetail } from '../../../src/ops/event-lookup.js';
import { openStore } from '../../../src/store/open-store.js';
import type { KyselyInboxStore } from '../../../src/store/kysely-store.js';
import { ADMIN, ADMIN_ENV } from '../../support/admin.js';
import { cli } from '../../support/cli.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness, TestClock } from '../../support/harness.js';
import { looseDb, migrateTo } from '../../support/older-schema.js';
import { describeEachService } from '../../support/store-suite.js';
import { TEST_SECRETS, stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

/** What each of the three events did to pi_typed, structured, and in the words the inbox has always used. */
const EXPECTED: Record<string, { outcome: string; outcomeDetail: EventOutcome }> = {
  evt_typed_captured: {
    outcome: 'applied: payment pi_typed captured',
    outcomeDetail: { kind: 'applied', paymentId: 'pi_typed', from: null, to: 'captured', detailsCompleted: false },
  },
  evt_typed_authorized: {
    outcome: 'ignored: payment already captured',
    outcomeDetail: { kind: 'stale', paymentId: 'pi_typed', state: 'captured', reported: 'authorized', detailsCompleted: false },
  },
  evt_typed_requires_action: {
    outcome: 'ignored: no business meaning: stripe payment_intent.requires_action',
    outcomeDetail: { kind: 'ignored', reason: 'no business meaning: stripe payment_intent.requires_action' },
  },
};

/** The two events about pi_typed: the ignored one is about no payment. */
const OF_PAYMENT = Object.fromEntries(Object.entries(EXPECTED).filter(([eventId]) => eventId !== 'evt_typed_requires_action'));

interface Shown {
  outcome: string | null;
  outcomeDetail: EventOutcome | null;
}

await describeEachService('typed outcomes: a processed, a stale and an ignored event, each in words and structured', ADMIN_ENV, (suite) => {
  const cliEnv = () => ({ DATABASE_URL: suite.database.url, STRIPE_WEBHOOK_SECRET: TEST_SECRETS.stripe });
  const api = async <T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> => {
    const response = await fetch(`${suite.service.url}${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${init.method ? ADMIN.operator : ADMIN.viewer}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    assert.equal(response.status, 200, path);
    return (await response.json()) as T;
  };
  const ids = new Map<string, number>();

  before(async () => {
    const { service } = suite;
    const sent: Array<[string, string]> = [
      ['evt_typed_captured', 'payment_intent.succeeded'],
      ['evt_typed_authorized', 'payment_intent.amount_capturable_updated'],
      ['evt_typed_requires_action', 'payment_intent.requires_action'],
    ];
    for (const [eventId, type] of sent) {
      assert.equal((await service.post(stripeDelivery(stripePaymentEvent(eventId, type, 'pi_typed')))).status, 200);
      await service.waitUntilProcessed(ids.size + 1);
      ids.set(eventId, (await service.db.selectFrom('webhook_events').select('id').where('event_id', '=', eventId).executeTakeFirstOrThrow()).id);
    }
  });

  test('each is stored structured beside its text, by the statement that marked it processed', async () => {
    const rows = await suite.service.db.selectFrom('webhook_events').select(['event_id', 'outcome', 'outcome_detail']).where('event_id', 'like', 'evt_typed_%').execute();
    assert.deepEqual(Object.fromEntries(rows.map((row) => [row.event_id, { outcome: row.outcome, outcomeDetail: JSON.parse(row.outcome_detail ?? 'null') as unknown }])), EXPECTED);
    for (const [eventId, expected] of Object.entries(EXPECTED)) {
      const state = await suite.service.inbox.store.findEvent('stripe', eventId);
      assert.deepEqual({ outcome: state?.outcome, outcomeDetail: state?.outcomeDetail }, expected, `${eventId}: the store's EventState`);
    }
  });

  test('the admin API gives both: the event, its processings, the events list and the payment', async () => {
    for (const [eventId, expected] of Object.entries(EXPECTED)) {
      const detail = await api<Shown & { processings: Shown[] }>(`/admin/api/events/${ids.get(eventId)}`);
      assert.deepEqual({ outcome: detail.outcome, outcomeDetail: detail.outcomeDetail }, expected, eventId);
      assert.deepEqual(
        detail.processings.map((p) => ({ outcome: p.outcome, outcomeDetail: p.outcomeDetail })),
        [expected],
        `${eventId}: its processing`,
      );
    }
    const list = await api<{ events: Array<Shown & { eventId: string }> }>('/admin/api/events?provider=stripe');
    assert.deepEqual(Object.fromEntries(list.events.map((e) => [e.eventId, { outcome: e.outcome, outcomeDetail: e.outcomeDetail }])), EXPECTED);
    const payment = await api<{ events: Array<Shown & { eventId: string }> }>('/admin/api/payments/stripe/pi_typed');
    assert.deepEqual(Object.fromEntries(payment.events.map((e) => [e.eventId, { outcome: e.outcome, outcomeDetail: e.outcomeDetail }])), OF_PAYMENT);
  });

  test('events show --json, events list --json and payments show --json give both', async () => {
    for (const [eventId, expected] of Object.entries(EXPECTED)) {
      const shown = await cli(['events', 'show', eventId, '--json'], cliEnv());
      assert.equal(shown.code, 0, shown.output);
      const detail = JSON.parse(shown.output) as Shown & { processings: Shown[] };
      assert.deepEqual({ outcome: detail.outcome, outcomeDetail: detail.outcomeDetail }, expected, eventId);
      assert.deepEqual(
        detail.processings.map((p) => ({ outcome: p.outcome, outcomeDetail: p.outcomeDetail })),
        [expected],
      );
    }
    const text = await cli(['events', 'show', 'evt_typed_authorized'], cliEnv());
    assert.match(text.output, /^outcome: +ignored: payment already captured$/m, 'in words for people');
    assert.doesNotMatch(text.output, /outcomeDetail/, 'the structure is for scripts');
    const listed = await cli(['events', 'list', '--provider', 'stripe', '--json'], cliEnv());
    assert.equal(listed.code, 0, listed.output);
    const { events } = JSON.parse(listed.output) as { events: Array<{ event_id: string; outcome: string; outcome_detail: EventOutcome }> };
    assert.deepEqual(Object.fromEntries(events.map((e) => [e.event_id, { outcome: e.outcome, outcomeDetail: e.outcome_detail }])), EXPECTED);
    const payment = await cli(['payments', 'show', 'stripe', 'pi_typed', '--json'], cliEnv());
    assert.equal(payment.code, 0, payment.output);
    const shownPayment = JSON.parse(payment.output) as { events: Array<Shown & { eventId: string }> };
    assert.deepEqual(Object.fromEntries(shownPayment.events.map((e) => [e.eventId, { outcome: e.outcome, outcomeDetail: e.outcomeDetail }])), OF_PAYMENT);
  });

  test('a replay keeps the structured outcome of the processing it replaces; its own comes back with it', async () => {
    const id = ids.get('evt_typed_captured')!;
    const replayed = await api<{ detail: string; outcomeDetail: EventOutcome }>(`/admin/api/events/${id}/replay`, {
      method: 'POST',
      body: { dryRun: false, reason: 'typed check' },
    });
    const again = {
      outcome: 'ignored: payment already captured',
      outcomeDetail: { kind: 'stale', paymentId: 'pi_typed', state: 'captured', reported: 'captured', detailsCompleted: false },
    };
    assert.deepEqual({ outcome: replayed.detail, outcomeDetail: replayed.outcomeDetail }, again);
    const detail = await api<Shown & { processings: Shown[] }>(`/admin/api/events/${id}`);
    assert.deepEqual(
      detail.processings.map((p) => ({ outcome: p.outcome, outcomeDetail: p.outcomeDetail })),
      [EXPECTED.evt_typed_captured, again],
    );
    const shown = await cli(['events', 'show', String(id), '--json'], cliEnv());
    assert.deepEqual(
      (JSON.parse(shown.output) as { processings: Shown[] }).processings.map((p) => ({ outcome: p.outcome, outcomeDetail: p.outcomeDetail })),
      [EXPECTED.evt_typed_captured, again],
    );
  });
});

const databases = await createTestDatabases();
const applierDatabases = await createTestDatabases();

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`migration 0032 on events processed with text outcomes only (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let store: KyselyInboxStore;
    let applied: string[];

    before(async () => {
      store = openStore((database as TestDatabase).url, { poolSize: 2, clock: new TestClock() });
      await migrateTo(store, backend, '0030_payment_list_indexes');
      const at = '2026-12-01 00:00:00.000';
      const old = [
        { event_id: 'evt_old_1', outcome: 'applied: payment pi_old captured' },
        { event_id: 'evt_old_2', outcome: 'ignored: payment already captured' },
      ];
      for (const { event_id, outcome } of old) {
        const row = {
          provider: 'stripe',
          event_id,
          event_type: 'payment_intent.succeeded',
          status: 'processed',
          attempts: 1,
          outcome,
          created_at: at,
          processed_at: at,
          payment_id: 'pi_old',
        };
        await looseDb(store).insertInto('webhook_events').values(row).execute();
        const { id } = (await looseDb(store).selectFrom('webhook_events').select('id').where('event_id', '=', event_id).executeTakeFirstOrThrow()) as { id: number };
        await looseDb(store).insertInto('webhook_event_bodies').values({ event_row_id: id, payload: '{}', headers: '{}' }).execute();
      }
      const { id: replayedId } = (await looseDb(store).selectFrom('webhook_events').select('id').where('event_id', '=', 'evt_old_2').executeTakeFirstOrThrow()) as { id: number };
      await looseDb(store)
        .insertInto('event_replays')
        .values({
          event_row_id: replayedId,
          provider: 'stripe',
          event_id: 'evt_old_2',
          actor: 'alice',
          reason: 'before the migration',
          previous_status: 'processed',
          previous_attempts: 1,
          previous_outcome: 'applied: payment pi_old captured',
          previous_processed_at: '2026-11-30 00:00:00.000',
          made_due_at: '2026-11-30 12:00:00.000',
          requested_at: '2026-11-30 12:00:00.000',
        })
        .execute();
      applied = await store.migrate();
    });
    after(async () => {
      await store?.close();
      await (database as TestDatabase).drop();
    });

    test('their text stays and reads as before; their structured form is null (never guessed from the text)', async () => {
      assert.ok(applied.includes('0032_typed_outcomes'), applied.join(', '));
      const rows = await store.db.selectFrom('webhook_events').select(['event_id', 'outcome', 'outcome_detail']).orderBy('id').execute();
      assert.deepEqual(rows, [
        { event_id: 'evt_old_1', outcome: 'applied: payment pi_old captured', outcome_detail: null },
        { event_id: 'evt_old_2', outcome: 'ignored: payment already captured', outcome_detail: null },
      ]);
      const state = await store.findEvent('stripe', 'evt_old_1');
      assert.deepEqual([state?.outcome, state?.outcomeDetail], ['applied: payment pi_old captured', null]);
      const detail = await eventDetail(store.db, 'evt_old_2');
      assert.deepEqual([detail.outcome, detail.outcomeDetail], ['ignored: payment already captured', null]);
      assert.deepEqual(
        detail.processings.map((p) => [p.outcome, p.outcomeDetail]),
        [
          ['applied: payment pi_old captured', null],
          ['ignored: payment already captured', null],
        ],
        'the replay kept the text of the processing it replaced',
      );
      // The course platform's tables are not there: this database holds the inbox's alone.
      const shown = await cli(['events', 'show', 'evt_old_2', '--json'], { DATABASE_URL: (database as TestDatabase).url, COURSE_PLATFORM: 'false' });
      assert.equal(shown.code, 0, shown.output);
      const json = JSON.parse(shown.output) as Shown & { processings: Shown[] };
      assert.deepEqual([json.outcome, json.outcomeDetail, json.processings.map((p) => p.outcomeDetail)], ['ignored: payment already captured', null, [null, null]]);
    });
  });

  const applierDatabase = applierDatabases[backend];
  describe(`an application's own apply: text as before, or a structured outcome (${backend})`, { skip: 'skip' in applierDatabase && applierDatabase.skip }, () => {
    let service: Harness;
    // What the application returns for each event, by event id; the form earlier versions took first.
    const returns: Record<string, Awaited<ReturnType<EventApplier>>> = {
      evt_app_text: { text: 'granted 3 credits' },
      evt_app_string: 'granted 4 credits',
      evt_app_custom: { kind: 'custom', text: 'granted 5 credits' },
      evt_app_ignored: { kind: 'ignored', reason: 'not a purchase' },
    };
    before(async () => {
      const apply: EventApplier = async (_tx, event) => returns[event.eventId]!;
      service = await Harness.start((applierDatabase as TestDatabase).url, {}, { apply });
    });
    after(async () => {
      await service?.close();
      await (applierDatabase as TestDatabase).drop();
    });

    test('text is stored as a custom outcome; a structured one as it is', async () => {
      for (const eventId of Object.keys(returns))
        assert.equal((await service.post(stripeDelivery(stripePaymentEvent(eventId, 'payment_intent.succeeded', `pi_${eventId}`)))).status, 200);
      await service.waitUntilProcessed(Object.keys(returns).length);
      const shown = await Promise.all(Object.keys(returns).map(async (eventId) => [eventId, await service.inbox.store.findEvent('stripe', eventId)] as const));
      assert.deepEqual(Object.fromEntries(shown.map(([eventId, state]) => [eventId, [state?.outcome, state?.outcomeDetail]])), {
        evt_app_text: ['granted 3 credits', { kind: 'custom', text: 'granted 3 credits' }],
        evt_app_string: ['granted 4 credits', { kind: 'custom', text: 'granted 4 credits' }],
        evt_app_custom: ['granted 5 credits', { kind: 'custom', text: 'granted 5 credits' }],
        evt_app_ignored: ['ignored: not a purchase', { kind: 'ignored', reason: 'not a purchase' }],
      });
    });
  });
}
