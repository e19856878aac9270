import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import type { CoursePlatformDatabase } from '../../src/course-platform/schema.js';
import { createTestDatabase, migratedDatabase, type TestDatabase } from '../support/database.js';
import { waitFor } from '../support/harness.js';
import { capturedPayments, deliverUntilAcknowledged, holdPayment, inParallel, outcomeCounts, waitUntilAllProcessed } from '../support/load.js';
import { exitOf, type CliProcess } from '../support/cli.js';
import { killAll, serve, worker } from '../support/processes.js';
import { createTestStream, SERVER_BACKENDS, STORE_NAMES, type TestStream } from '../support/services.js';

const LEASE_SECONDS = 2;

for (const backend of SERVER_BACKENDS) {
  const database = await createTestDatabase(backend);
  const redis = 'skip' in database ? database : await createTestStream();
  const unavailable = ('skip' in database && database) || ('skip' in redis && redis);

  describe(`a worker process killed (SIGKILL) in the middle of processing, on ${STORE_NAMES[backend]}`, { skip: unavailable && unavailable.skip }, () => {
    let db: TestDatabase;
    let stream: TestStream;
    let sql: Kysely<CoursePlatformDatabase>;
    let receiver: string;
    let workers: CliProcess[];
    const children: CliProcess[] = [];

    before(async () => {
      db = database as TestDatabase;
      stream = redis as TestStream;
      sql = await migratedDatabase(db.url);
      const env = {
        DATABASE_URL: db.url,
        REDIS_URL: stream.url,
        REDIS_STREAM: stream.stream,
        MIGRATE_ON_START: 'false',
        SWEEP_INTERVAL_MS: '200',
        LEASE_SECONDS: String(LEASE_SECONDS),
      };
      const server = await serve(env, ['--no-workers']);
      receiver = server.url;
      workers = await Promise.all([worker(env), worker(env)]);
      children.push(server.child, ...workers);
    });
    after(async () => {
      await killAll();
      await sql?.destroy();
      await stream?.drop();
      await db?.drop();
    });

    const heldEvent = () => sql.selectFrom('webhook_events').where('event_id', '=', 'evt_takeover_0_payment_intent.succeeded');

    test('its events are taken over after the lease and processed exactly once', async () => {
      // An uncommitted payments row of our own makes the worker that processes this payment wait on
      // its insert: it is caught in the middle of its business transaction.
      const held = await holdPayment(sql, 'stripe', 'pi_takeover_0');

      const events = capturedPayments('takeover', 60, 0);
      await inParallel(
        events.map((event) => () => deliverUntilAcknowledged(receiver, event.delivery)),
        8,
      );

      const stuck = await (async () => {
        let owner = '';
        await waitFor('the held payment to be claimed', async () => {
          const row = await heldEvent().select(['status', 'lease_owner']).executeTakeFirstOrThrow();
          owner = row.status === 'processing' && row.lease_owner ? row.lease_owner : '';
          return owner !== '';
        });
        return owner;
      })();
      const victim = workers.find((w) => stuck.includes(`:${w.pid}:`));
      assert.ok(victim, `lease owner ${stuck} is one of the workers`);
      victim.kill('SIGKILL');
      await exitOf(victim);
      await held.rollback().execute();

      await waitUntilAllProcessed(sql, events.length, 30_000);
      const taken = await heldEvent().select(['attempts', 'lease_owner', 'outcome']).executeTakeFirstOrThrow();
      assert.equal(taken.attempts, 2, 'the killed attempt, then the takeover');
      assert.notEqual(taken.lease_owner, stuck, 'taken over by the surviving worker');
      assert.equal(taken.outcome, 'applied: payment pi_takeover_0 captured');

      const counts = await outcomeCounts(sql);
      assert.deepEqual([counts.events, counts.processed, counts.applied], [60, 60, 60]);
      assert.deepEqual([counts.payments, counts.orders, counts.enrollments, counts.receipts], [60, 60, 60, 60], 'one effect per payment');
      const maxAttempts = await sql
        .selectFrom('webhook_events')
        .select((eb) => eb.fn.max('attempts').as('n'))
        .executeTakeFirstOrThrow();
      assert.ok(Number(maxAttempts.n) <= 2, 'nothing beyond the one takeover per event');
      // The stream entries the dead consumer held are claimed by the survivor and acknowledged.
      await waitFor('no stream entry left pending', async () => (await stream.group())?.pending === 0, 15_000);
    });
  });
}
