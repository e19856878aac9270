import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import pino from 'pino';
import { OutboxDispatcher } from '../../../src/outbox/dispatcher.js';
import { OutboxStore, type OutboxMessage } from '../../../src/outbox/outbox-store.js';
import type { OutboxTransport } from '../../../src/outbox/transport.js';
import { toDbTime } from '../../../src/db/schema.js';
import type { KyselyInboxStore } from '../../../src/store/kysely-store.js';
import { waitFor } from '../../support/harness.js';
import { watchingQueries } from '../../support/query-watch.js';
import { describeEachStore } from '../../support/store-suite.js';

/** How the dispatcher's lanes share claims and finishes, on every store backend. */
const LEASE_MS = 30_000;

await describeEachStore('outbox dispatcher', (suite) => {
  let store: KyselyInboxStore;
  before(() => ({ store } = suite));

  async function addRows(prefix: string, count: number): Promise<number[]> {
    const now = toDbTime(suite.clock.now());
    const keys = Array.from({ length: count }, (_, i) => `${prefix}:${i}`);
    await store.db
      .insertInto('outbox')
      .values(keys.map((key) => ({ idempotency_key: key, kind: 'test', payload: '{}', status: 'pending' as const, attempts: 0, next_attempt_at: now, created_at: now })))
      .execute();
    return (await store.db.selectFrom('outbox').select('id').where('idempotency_key', 'like', `${prefix}:%`).orderBy('id').execute()).map((row) => row.id);
  }

  /** A dispatcher of kind `test` whose claim and finish UPDATEs are counted (a claim is the one that sets a lease token). */
  function dispatcher(transport: OutboxTransport, sizes: { concurrency: number; claimAhead: number }, pacing: { pollIntervalMs?: number; eventsBehind?: () => boolean } = {}) {
    const statements = { claims: 0, finishes: 0 };
    const counter = watchingQueries((node) => {
      if (node.kind !== 'UpdateQueryNode') return;
      if (JSON.stringify(node).includes('"sending"') && JSON.stringify(node).includes('"attempts"')) statements.claims++;
      else statements.finishes++;
    });
    const outbox = new OutboxDispatcher({
      store: new OutboxStore(store.db.withPlugin(counter), suite.clock),
      transports: { test: transport },
      owner: 'dispatcher',
      leaseMs: LEASE_MS,
      retry: { maxAttempts: 5, baseMs: 1000, maxMs: 60_000 },
      ...sizes,
      pollIntervalMs: pacing.pollIntervalMs ?? 50,
      eventsBehind: pacing.eventsBehind,
      clock: suite.clock,
      logger: pino({ level: 'silent' }),
    });
    return { outbox, statements };
  }

  const rowsOf = (ids: number[]) => store.db.selectFrom('outbox').select(['id', 'status', 'attempts', 'lease_token']).where('id', 'in', ids).orderBy('id').execute();

  test('rows are claimed lanes x claim-ahead at a time, and finished together while the lanes go on', async () => {
    const ids = await addRows('chunk', 20);
    const { outbox, statements } = dispatcher({ deliver: async () => ({ status: 'sent', outcome: 'ok' }) }, { concurrency: 2, claimAhead: 4 });
    const counts = await outbox.runOnce();
    assert.equal(counts.due, 20);
    assert.equal(counts.sent, 20);
    assert.equal(statements.claims, 3, 'chunks of 8, 8 and 4 rows: one claim each');
    assert.ok(statements.finishes < 10, `the lanes did not wait for each verdict, so finishes shared UPDATEs (${statements.finishes} for 20 rows)`);
    for (const row of await rowsOf(ids)) assert.deepEqual([row.status, row.attempts, row.lease_token], ['sent', 1, null]);
  });

  test('no more than `concurrency` deliveries run at once, whatever was claimed ahead', async () => {
    await addRows('lanes', 12);
    let running = 0;
    let most = 0;
    const transport: OutboxTransport = {
      deliver: async () => {
        most = Math.max(most, ++running);
        await new Promise((resolve) => setTimeout(resolve, 5));
        running--;
        return { status: 'sent', outcome: 'ok' };
      },
    };
    const counts = await dispatcher(transport, { concurrency: 3, claimAhead: 4 }).outbox.runOnce();
    assert.equal(counts.sent, 12);
    assert.equal(most, 3);
  });

  test('a stopping dispatcher finishes the deliveries it started and gives back the rows it had not started', async () => {
    const ids = await addRows('stop', 8);
    const started: OutboxMessage[] = [];
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const transport: OutboxTransport = {
      deliver: async (message) => {
        started.push(message);
        await held;
        return { status: 'sent', outcome: 'ok' };
      },
    };
    const { outbox } = dispatcher(transport, { concurrency: 2, claimAhead: 4 });
    outbox.start();
    await waitFor('two deliveries started', () => started.length >= 2);
    const stopped = outbox.stop(5000);
    release();
    assert.equal(await stopped, true);

    const rows = await rowsOf(ids);
    const startedIds = new Set(started.map((message) => message.id));
    assert.equal(startedIds.size, 2);
    for (const row of rows) {
      if (startedIds.has(row.id)) assert.deepEqual([row.status, row.attempts], ['sent', 1], 'a started delivery is finished');
      else assert.deepEqual([row.status, row.attempts, row.lease_token], ['pending', 0, null], 'due again at once, the claim not counted as an attempt');
    }
    await store.db.deleteFrom('outbox').where('idempotency_key', 'like', 'stop:%').execute();
  });

  test('while event processing is behind, one batch per poll interval; batch after batch otherwise', async () => {
    await addRows('behind', 250);
    const sent = async () => (await store.db.selectFrom('outbox').select('id').where('idempotency_key', 'like', 'behind:%').where('status', '=', 'sent').execute()).length;
    const until = (count: number) => waitFor(`${count} rows sent`, async () => (await sent()) >= count);
    const instant: OutboxTransport = { deliver: async () => ({ status: 'sent', outcome: 'ok' }) };

    let behind = true;
    const yielding = dispatcher(instant, { concurrency: 4, claimAhead: 4 }, { pollIntervalMs: 60_000, eventsBehind: () => behind }).outbox;
    yielding.start();
    await until(100);
    await new Promise((resolve) => setTimeout(resolve, 300));
    assert.equal(await sent(), 100, 'one batch, then it waits for the poll interval');
    await yielding.stop(1000);

    behind = false;
    const eager = dispatcher(instant, { concurrency: 4, claimAhead: 4 }, { pollIntervalMs: 60_000, eventsBehind: () => behind }).outbox;
    eager.start();
    await until(250);
    await eager.stop(1000);
  });
});
