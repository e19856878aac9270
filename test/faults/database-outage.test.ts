import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { inspectDatabase } from '../support/database.js';
import { serviceInbox, testConfig } from '../support/harness.js';
import { capturedPayments, deliver, outcomeCounts, waitUntilAllProcessed, type Answer, type PaymentEvent } from '../support/load.js';
import type { CliProcess } from '../support/cli.js';
import { killAll, serve, worker } from '../support/processes.js';
import { createTestStream, SERVER_BACKENDS, startPrivateDatabase, STORE_NAMES, type PrivateDatabaseServer, type TestStream } from '../support/services.js';

/** Bounded 503s are the point: a frozen database must not hold a delivery longer than this (+ slack). */
const RECORD_TIMEOUT_MS = 1000;

/**
 * A provider that keeps sending new events and retries every unacknowledged delivery until it gets a
 * 200, as Stripe and Razorpay do (here after 200 ms instead of minutes). Each answer is filed under
 * the phase in which its request started.
 */
class Provider {
  readonly answers: Array<Answer & { phase: string; ms: number }> = [];
  readonly acknowledged = new Set<string>();
  phase = 'up';
  private sending = true;

  constructor(
    private readonly receivers: string[],
    private readonly events: PaymentEvent[],
  ) {}

  async run(lanes: number): Promise<void> {
    let next = 0;
    let turn = 0;
    const lane = async () => {
      while (this.sending && next < this.events.length) {
        const event = this.events[next++]!;
        while (!this.acknowledged.has(event.eventId)) {
          const phase = this.phase;
          const started = performance.now();
          const answer = await deliver(this.receivers[turn++ % this.receivers.length]!, event.delivery());
          this.answers.push({ ...answer, phase, ms: performance.now() - started });
          if (answer.status === 200) this.acknowledged.add(event.eventId);
          else await sleep(200);
        }
      }
    };
    await Promise.all(Array.from({ length: lanes }, lane));
  }

  /** Resolves once `count` more events have been acknowledged. */
  async progress(count: number): Promise<void> {
    const target = this.acknowledged.size + count;
    while (this.acknowledged.size < target) await sleep(50);
  }

  during(phase: string) {
    return this.answers.filter((a) => a.phase === phase);
  }

  stop(): void {
    this.sending = false;
  }
}

for (const backend of SERVER_BACKENDS) {
  const database = await startPrivateDatabase(backend);
  const redis = 'skip' in database ? database : await createTestStream();
  const unavailable = ('skip' in database && database) || ('skip' in redis && redis);

  describe(`${STORE_NAMES[backend]} stopped, then frozen, under load (private server)`, { skip: unavailable && unavailable.skip }, () => {
    let server: PrivateDatabaseServer;
    let stream: TestStream;
    let databaseUrl: string;
    let receivers: string[];
    const children: CliProcess[] = [];

    before(async () => {
      server = database as PrivateDatabaseServer;
      stream = redis as TestStream;
      databaseUrl = `${server.url}/webhook_inbox`;
      const migrator = serviceInbox(testConfig(databaseUrl));
      await migrator.store.migrate();
      await migrator.store.close();
      const env = {
        DATABASE_URL: databaseUrl,
        REDIS_URL: stream.url,
        REDIS_STREAM: stream.stream,
        MIGRATE_ON_START: 'false',
        SWEEP_INTERVAL_MS: '200',
        LEASE_SECONDS: '3',
        RETRY_BASE_SECONDS: '1',
        RETRY_MAX_SECONDS: '2',
        RECORD_TIMEOUT_MS: String(RECORD_TIMEOUT_MS),
      };
      const [a, b, w] = await Promise.all([serve(env, ['--no-workers']), serve(env, ['--no-workers']), worker(env)]);
      receivers = [a.url, b.url];
      children.push(a.child, b.child, w);
    });
    after(async () => {
      await killAll();
      await stream?.drop();
      await server?.destroy();
    });

    test('503 quickly while it is down or hanging, recovery without restart, no acknowledged event lost', async () => {
      const events = capturedPayments('outage', 1000, 100);
      const provider = new Provider(receivers, events);
      const running = provider.run(4);

      await provider.progress(40);
      await server.stopServer();
      provider.phase = 'stopped';
      await sleep(3000);
      provider.phase = 'restarting';
      await server.startServer();
      await provider.progress(40);
      server.pause();
      // Requests started in the first half of the freeze time out before it ends: they must get 503.
      provider.phase = 'frozen';
      await sleep(1500);
      provider.phase = 'thawing';
      await sleep(1500);
      server.resume();
      provider.phase = 'thawed';
      await provider.progress(40);
      provider.stop();
      await running;

      for (const phase of ['stopped', 'frozen']) {
        const answers = provider.during(phase);
        console.log(
          `${phase}: ${answers.length} deliveries answered ${[...new Set(answers.map((a) => a.status))].join('/')}, slowest in ${Math.max(...answers.map((a) => a.ms)).toFixed(0)} ms`,
        );
        assert.ok(answers.length > 0, `deliveries were attempted while ${phase}`);
        const other = answers.filter((a) => a.status !== 503 || a.error !== 'store_unavailable');
        assert.deepEqual(other, [], `${phase}: only 503 store_unavailable`);
        const slowest = Math.max(...answers.map((a) => a.ms));
        assert.ok(slowest < RECORD_TIMEOUT_MS + 3000, `${phase}: every answer bounded by the record timeout (slowest ${slowest.toFixed(0)} ms)`);
      }
      assert.ok(
        provider.during('thawed').some((a) => a.status === 200),
        'acknowledging again after the freeze',
      );
      assert.ok(
        children.every((child) => child.exitCode === null && child.signalCode === null),
        'no process exited or was restarted',
      );

      // Every event the provider got a 200 for is stored and processed, with one effect per payment.
      const db = inspectDatabase(databaseUrl);
      try {
        const rows = await db.selectFrom('webhook_events').select('event_id').execute();
        const stored = new Set(rows.map((r) => r.event_id));
        assert.deepEqual(
          [...provider.acknowledged].filter((id) => !stored.has(id)),
          [],
          'no acknowledged event lost',
        );
        await waitUntilAllProcessed(db, stored.size, 60_000);
        const counts = await outcomeCounts(db);
        assert.equal(counts.processed, counts.events);
        assert.equal(counts.applied, counts.payments, 'one applied event per payment');
        assert.deepEqual([counts.orders, counts.enrollments, counts.receipts], [counts.payments, counts.payments, counts.payments], 'one effect per payment');
      } finally {
        await db.destroy();
      }
    });
  });
}
