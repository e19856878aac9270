import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { createInbox } from '../../../src/app.js';
import { coursePlatform } from '../../../src/course-platform/course-platform.js';
import type { PaymentHandlers } from '../../../src/domain/applier.js';
import type { Inbox } from '../../../src/inbox.js';
import { findEvents } from '../../../src/ops/event-lookup.js';
import { Replayer } from '../../../src/ops/replay.js';
import { cli } from '../../support/cli.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness, paymentEffects, testConfig } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const databases = await createTestDatabases();
const EVENTS = 12;

/** Capture handlers that count their runs and fail while `failing` is set, like a fulfilment outage. */
function outageHandlers() {
  const state = { failing: true, captured: 0 };
  const handlers: PaymentHandlers = {
    captured: [
      async () => {
        if (state.failing) throw new Error('fulfilment backend down (test)');
        state.captured++;
      },
    ],
  };
  return { state, options: { domains: [coursePlatform], handlers } };
}

function replayerOf(inbox: Inbox): Replayer {
  return new Replayer(inbox);
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`replay (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let service: Harness;
    let operators: Inbox[];
    const { state, options } = outageHandlers();
    // One attempt, so a failure stays failed for an operator (no automatic retry).
    const env = { MAX_ATTEMPTS: '1' };

    before(async () => {
      db = database as TestDatabase;
      service = await Harness.start(db.url, env, options);
      // Two operators' processes: each its own pool of connections and its own lease owner.
      operators = [createInbox(testConfig(db.url, env), options), createInbox(testConfig(db.url, env), options)];
    });
    after(async () => {
      await service?.close();
      for (const inbox of operators ?? []) await inbox.store.close();
      await db?.drop();
    });

    test('failed events: a dry run changes nothing and names the payment change', async () => {
      for (let i = 0; i < EVENTS; i++) {
        const response = await service.post(
          stripeDelivery(stripePaymentEvent(`evt_replay_${i}`, 'payment_intent.succeeded', `pi_replay_${i}`, { userId: `u_replay_${i}`, courseId: 'c_replay' })),
        );
        assert.equal(response.status, 200);
      }
      await service.waitFor('every event failed', async () => (await service.countRows('webhook_events', 'failed')) === EVENTS);

      const report = await replayerOf(operators[0]!).runOnce({ kind: 'filter', filter: { status: 'failed', limit: 100 } }, { dryRun: true, actor: 'tester' });
      assert.equal(report.items.length, EVENTS);
      assert.deepEqual(report.items[0], {
        id: report.items[0]!.id,
        provider: 'stripe',
        eventId: 'evt_replay_0',
        eventType: 'payment_intent.succeeded',
        previousStatus: 'failed',
        transition: 'payment pi_replay_0: new -> captured',
        result: 'would_replay',
      });
      assert.equal(await service.countRows('webhook_events', 'failed'), EVENTS, 'nothing changed');
      assert.equal(await service.countRows('event_replays'), 0, 'a dry run is not a replay');
    });

    test('two replays of the failed events at once, with the service running: each event processed once', async () => {
      state.failing = false;
      const selection = { kind: 'filter', filter: { status: 'failed', limit: 100 } } as const;
      const started = performance.now();
      const reports = await Promise.all(
        operators.map((inbox, i) => replayerOf(inbox).runOnce(selection, { dryRun: false, actor: `operator_${i}`, reason: 'fulfilment backend is back' })),
      );
      const elapsed = performance.now() - started;

      assert.equal(state.captured, EVENTS, 'capture effects ran once per event');
      const processedByReplays = reports.reduce((n, r) => n + r.counts.processed, 0);
      assert.ok(processedByReplays <= EVENTS);
      assert.equal(
        reports.reduce((n, r) => n + r.counts.failed, 0),
        0,
      );
      await service.waitFor('every event processed', async () => (await service.countRows('webhook_events', 'processed')) === EVENTS);
      for (let i = 0; i < EVENTS; i++) {
        assert.deepEqual(await paymentEffects(service.db, `pi_replay_${i}`), { payments: 1, orders: 1, enrollments: 1, receipts: 1 });
        const event = await service.inbox.store.findEvent('stripe', `evt_replay_${i}`);
        assert.equal(event?.attempts, 1, 'the replay claimed it once (attempts restart at a replay)');
      }

      const log = await service.db.selectFrom('event_replays').selectAll().execute();
      // An operator records every event it selected; the later one may select fewer (some already done).
      assert.ok(log.length >= EVENTS && log.length <= 2 * EVENTS, String(log.length));
      assert.ok(log.every((r) => r.reason === 'fulfilment backend is back' && /^operator_[01]$/.test(r.actor) && r.previous_status === 'failed' && r.finished_at !== null));
      assert.equal(log.filter((r) => r.result?.startsWith('processed')).length, processedByReplays);
      assert.match(log[0]!.previous_error ?? '', /fulfilment backend down/);
      console.log(`replayed ${EVENTS} failed events with two concurrent replays in ${elapsed.toFixed(0)} ms`);
    });

    test('replaying a processed event by id runs it again without a second effect', async () => {
      const report = await replayerOf(operators[0]!).runOnce({ kind: 'events', refs: ['evt_replay_0'] }, { dryRun: false, actor: 'tester', reason: 'check' });
      assert.equal(report.items[0]?.result, 'processed');
      assert.equal(report.items[0]?.detail, 'ignored: payment already captured');
      assert.equal(state.captured, EVENTS);
      assert.deepEqual(await paymentEffects(service.db, 'pi_replay_0'), { payments: 1, orders: 1, enrollments: 1, receipts: 1 });
    });

    test('an event under a live lease is not touched', async () => {
      await service.db
        .updateTable('webhook_events')
        .set({ status: 'processing', lease_owner: 'other-worker', lease_token: 'live', lease_expires_at: '2999-01-01 00:00:00.000' })
        .where('event_id', '=', 'evt_replay_1')
        .execute();
      const report = await replayerOf(operators[0]!).runOnce({ kind: 'events', refs: ['evt_replay_1'] }, { dryRun: false, actor: 'tester', reason: 'check' });
      assert.equal(report.items[0]!.result, 'skipped');
      assert.match(report.items[0]!.detail ?? '', /^leased by other-worker until 2999-01-01/);
      const row = await service.db.selectFrom('webhook_events').select(['status', 'lease_token']).where('event_id', '=', 'evt_replay_1').executeTakeFirstOrThrow();
      assert.deepEqual(row, { status: 'processing', lease_token: 'live' });
    });

    // The commands are the same over both stores; their wiring is checked once.
    if (backend === 'mysql')
      test('the CLI: events show, replay --dry-run, replay --reason', async () => {
        const env = { DATABASE_URL: db.url, STRIPE_WEBHOOK_SECRET: 'whsec_unused' };
        const show = await cli(['events', 'show', 'evt_replay_0', '--json'], env);
        assert.equal(show.code, 0, show.output);
        const detail = JSON.parse(show.output) as { status: string; payload: string; replays: Array<{ actor: string }> };
        assert.equal(detail.status, 'processed');
        assert.equal((JSON.parse(detail.payload) as { id: string }).id, 'evt_replay_0');
        assert.ok(detail.replays.some((r) => r.actor === 'tester'));

        const dry = await cli(['replay', 'evt_replay_2', '--dry-run'], env);
        assert.equal(dry.code, 0, dry.output);
        assert.match(dry.output, /payment pi_replay_2: stays captured \(event reports captured\) +would replay/);

        const replayed = await cli(['replay', 'evt_replay_2', '--reason', 'cli check', '--actor', 'cli-tester', '--json'], env);
        assert.equal(replayed.code, 0, replayed.output);
        assert.equal((JSON.parse(replayed.output) as { counts: { processed: number } }).counts.processed, 1);
      });

    test('events are listed by filter; unknown events and missing reasons are clear errors', async () => {
      const db = operators[0]!.database;
      const page = await findEvents(db, { provider: 'stripe', status: 'processed', limit: 3 });
      assert.deepEqual([page.events.length, page.more], [3, true]);
      assert.equal((await findEvents(db, { type: 'charge.refunded', limit: 10 })).events.length, 0);
      assert.equal((await findEvents(db, { from: new Date(Date.now() + 60_000), limit: 10 })).events.length, 0);
      const replayer = replayerOf(operators[0]!);
      await assert.rejects(replayer.runOnce({ kind: 'events', refs: ['evt_missing'] }, { dryRun: true, actor: 'tester' }), /no event "evt_missing"/);
      await assert.rejects(replayer.runOnce({ kind: 'events', refs: ['evt_replay_3'] }, { dryRun: false, actor: 'tester', reason: '  ' }), /needs --reason/);
    });
  });
}
