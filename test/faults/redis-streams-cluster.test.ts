import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import type { CoursePlatformDatabase } from '../../src/course-platform/schema.js';
import { createTestDatabase, migratedDatabase, type TestDatabase } from '../support/database.js';
import { waitFor } from '../support/harness.js';
import {
  capturedPayments,
  deliverUntilAcknowledged,
  inParallel,
  outcomeCounts,
  processingLag,
  waitUntilAllProcessed,
  type Acknowledged,
  type PaymentEvent,
} from '../support/load.js';
import type { CliProcess } from '../support/cli.js';
import { killAll, serve, worker } from '../support/processes.js';
import { PrivateRedis } from '../support/services.js';

/**
 * 4 receivers (`serve --no-workers`) and 2 workers (`worker`), separate processes on one MariaDB and
 * a private Redis, driven like providers drive them: many concurrent deliveries and duplicates. On
 * MariaDB only, for the time CI takes: on PostgreSQL the short chaos run covers the same ground
 * (concurrent copies, Redis flushed and restarted under separate receivers and workers).
 */
const RECEIVERS = 4;
const WORKERS = 2;
const BURST = 20;

const database = await createTestDatabase();
const redis = 'skip' in database ? database : await PrivateRedis.start();
const unavailable = ('skip' in database && database) || ('skip' in redis && redis);

describe(`${RECEIVERS} receivers + ${WORKERS} workers on MariaDB and Redis Streams`, { skip: unavailable && unavailable.skip }, () => {
  let db: TestDatabase;
  let privateRedis: PrivateRedis;
  let sql: Kysely<CoursePlatformDatabase>;
  let receivers: string[] = [];
  const children: CliProcess[] = [];
  const stream = 'webhook-inbox:events';

  before(async () => {
    db = database as TestDatabase;
    privateRedis = redis as PrivateRedis;
    sql = await migratedDatabase(db.url);

    const env = { DATABASE_URL: db.url, REDIS_URL: privateRedis.url, REDIS_STREAM: stream, MIGRATE_ON_START: 'false', SWEEP_INTERVAL_MS: '500' };
    const [servers, workers] = await Promise.all([
      Promise.all(Array.from({ length: RECEIVERS }, () => serve(env, ['--no-workers']))),
      Promise.all(Array.from({ length: WORKERS }, () => worker({ ...env, WORKER_CONCURRENCY: '4' }))),
    ]);
    receivers = servers.map((s) => s.url);
    children.push(...servers.map((s) => s.child), ...workers);
  });
  after(async () => {
    await killAll();
    await sql?.destroy();
    await privateRedis?.stop();
    await db?.drop();
  });

  /**
   * Sends each event once, or as a burst of identical concurrent deliveries, spread over the
   * receivers; like a provider, each delivery is retried until acknowledged (an overloaded receiver
   * answers 503 after RECORD_TIMEOUT_MS).
   */
  function deliveries(events: PaymentEvent[], burstEvery: number): Array<() => Promise<Acknowledged[]>> {
    let turn = 0;
    const receiver = () => receivers[turn++ % receivers.length]!;
    return events.map((event, i) => () => {
      const copies = burstEvery > 0 && i % burstEvery === 0 ? BURST : 1;
      return Promise.all(Array.from({ length: copies }, () => deliverUntilAcknowledged(receiver(), event.delivery)));
    });
  }

  /** At most one delivery saw "recorded": one whose insert outlived its 503 is found as a duplicate. */
  function assertRecordedOnce(events: PaymentEvent[], answers: Acknowledged[][]): void {
    for (const [i, copies] of answers.entries()) {
      assert.ok(copies.filter((a) => a.outcome === 'recorded').length <= 1, `${events[i]!.eventId}: recorded by one delivery at most`);
    }
  }

  test('a storm of 2,000 events with 30% duplicates (bursts of 20): each processed exactly once, effects exact', async () => {
    // 1,600 payments, 400 of them reported twice (payment_intent.succeeded + charge.succeeded).
    const events = capturedPayments('storm', 1600, 400);
    // Every 44th event comes as 20 identical concurrent deliveries: 45 x 19 = 855 duplicates of 2,855.
    const tasks = deliveries(events, 44);
    const started = performance.now();
    const answers = await inParallel(tasks, 16);
    const seconds = (performance.now() - started) / 1000;
    const sent = answers.flat().length;
    assert.equal(events.length, 2000);
    assert.ok((sent - events.length) / sent >= 0.29, `${sent - events.length} duplicates of ${sent} deliveries`);
    assertRecordedOnce(events, answers);

    await waitUntilAllProcessed(sql, events.length, 120_000);
    assert.deepEqual(await outcomeCounts(sql), {
      events: 2000,
      processed: 2000,
      notExactlyOneAttempt: 0,
      applied: 1600,
      alreadyCaptured: 400,
      payments: 1600,
      orders: 1600,
      enrollments: 1600,
      receipts: 1600,
    });
    await waitFor('every stream entry acknowledged', async () => (await privateRedis.group(stream))?.pending === 0);
    const lag = await processingLag(sql, 'evt_storm_');
    const retried = answers.flat().reduce((sum, a) => sum + a.retries, 0);
    console.log(
      `storm: ${sent} deliveries in ${seconds.toFixed(1)} s (${(sent / seconds).toFixed(0)}/s, ${retried} retries after a 503); ` +
        `lag received->processed: median ${lag.median} ms, p99 ${lag.p99} ms, max ${lag.max} ms`,
    );
  });

  test('Redis flushed, then restarted, mid-run: nothing lost, nothing doubled, no process restarted', async () => {
    const events = capturedPayments('flush', 250, 50);
    const thirds = [events.slice(0, 100), events.slice(100, 200), events.slice(200)];
    const answers: Acknowledged[][] = [];
    answers.push(...(await inParallel(deliveries(thirds[0]!, 0), 8)));
    await privateRedis.flushAll();
    answers.push(...(await inParallel(deliveries(thirds[1]!, 0), 8)));
    await privateRedis.restart();
    answers.push(...(await inParallel(deliveries(thirds[2]!, 0), 8)));
    assertRecordedOnce(events, answers);

    await waitUntilAllProcessed(sql, 2000 + events.length, 60_000);
    const counts = await outcomeCounts(sql);
    assert.equal(counts.events, 2300);
    assert.equal(counts.notExactlyOneAttempt, 0, 'no event claimed twice');
    assert.deepEqual([counts.payments, counts.orders, counts.enrollments, counts.receipts], [1850, 1850, 1850, 1850]);
    assert.equal(counts.alreadyCaptured, 450);

    // The restarted Redis carries announcements again: the workers re-created their group and read
    // and acknowledged the entries of the last third.
    const group = await privateRedis.group(stream);
    assert.ok(group && group.entriesRead > 0, `entries read after the restart: ${JSON.stringify(group)}`);
    await waitFor('the workers to acknowledge the new entries', async () => (await privateRedis.group(stream))?.pending === 0);
    assert.ok(
      children.every((child) => child.exitCode === null && child.signalCode === null),
      'every process still running',
    );
  });
});
