import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { ProcessingThread } from '../../../src/service/processing-thread.js';
import { systemClock } from '../../../src/clock.js';
import { InFlight } from '../../../src/observability/in-flight.js';
import type { InboxMetrics } from '../../../src/observability/metrics.js';
import { openStore } from '../../../src/store/open-store.js';
import { exitOf } from '../../support/cli.js';
import { keepBusy } from '../../support/event-loop.js';
import { createTestDatabase, inspectDatabase, type TestDatabase } from '../../support/database.js';
import { testConfig, waitFor } from '../../support/harness.js';
import { metricValue } from '../../support/metrics.js';
import { killAll, serve } from '../../support/processes.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

/**
 * `serve` in background mode runs its workers in a thread of their own, at a lower CPU priority: the
 * events a request thread records are processed there, its metrics are scraped with the request
 * thread's, and SIGTERM lets it finish before the process exits.
 */
const database = await createTestDatabase('mysql');

/** The nice value of each thread of process `pid` (field 19 of /proc/PID/task/TID/stat); the main thread's id is the pid. */
function threadNices(pid: number): Array<{ tid: number; nice: number }> {
  return readdirSync(`/proc/${pid}/task`).map((tid) => {
    const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    return { tid: Number(tid), nice: Number(stat.slice(stat.lastIndexOf(') ') + 2).split(' ')[16]) };
  });
}

const EVENTS = 12;

/** What ProcessingThread.start reads of the request thread's inbox: its metrics (no-ops unless given), logger and deliveries in flight. */
function requestThreadInbox(metrics: Partial<InboxMetrics>, logger = pino({ level: 'silent' })) {
  const noOps = { attemptFinished: () => {}, eventProcessed: () => {}, leaseTakenOver: () => {} };
  return { metrics: { ...noOps, ...metrics } as InboxMetrics, logger, deliveriesInFlight: new InFlight() };
}

describe("serve: the workers' thread", { skip: 'skip' in database && database.skip }, () => {
  let db: TestDatabase;
  after(async () => {
    await killAll();
    if (!('skip' in database)) await database.drop();
  });
  before(() => {
    db = database as TestDatabase;
  });

  test('processes what the request thread records, counts it on /metrics, runs at WORKER_NICE with a small young generation and finishes on SIGTERM', async () => {
    // No sweep after the first: only the announcements can bring the events to the thread.
    const { child, url } = await serve({ DATABASE_URL: db.url, WORKER_NICE: '7', SWEEP_INTERVAL_MS: '3600000', LOG_LEVEL: 'info' });
    const deliveries = Array.from({ length: EVENTS }, (_, n) =>
      stripeDelivery(stripePaymentEvent(`evt_thread_${n}`, 'payment_intent.succeeded', `pi_thread_${n}`, { userId: `u_thread_${n}`, courseId: 'c_thread' })),
    );
    for (const delivery of deliveries) {
      const response = await fetch(`${url}/webhooks/stripe`, { method: 'POST', headers: delivery.headers, body: delivery.body });
      assert.equal(response.status, 200);
    }
    const inspect = inspectDatabase(db.url, 2);
    try {
      const processed = async () => (await inspect.selectFrom('webhook_events').select('id').where('status', '=', 'processed').execute()).length;
      await waitFor('every event processed', async () => (await processed()) === EVENTS, 15_000);
      const enrollments = await inspect.selectFrom('enrollments').select('user_id').where('course_id', '=', 'c_thread').execute();
      assert.equal(enrollments.length, EVENTS);

      await waitFor('the attempts counted on /metrics', async () => {
        const metrics = await (await fetch(`${url}/metrics`)).text();
        return metricValue(metrics, 'webhook_inbox_processing_attempts_total', { provider: 'stripe', result: 'processed' }) === EVENTS;
      });

      const threads = threadNices(child.pid!);
      assert.equal(threads.filter((t) => t.nice === 7).length, 1, `one thread at nice 7: ${JSON.stringify(threads)}`);
      assert.equal(threads.find((t) => t.tid === child.pid)?.nice, 0, 'the request thread keeps the priority of the process');
    } finally {
      await inspect.destroy();
    }

    child.kill('SIGTERM');
    assert.equal(await exitOf(child), 0, child.output());
    assert.doesNotMatch(child.output(), /thread (failed|exited)/);
    // The thread's own heap has the small young generation it was given (WORKERS_YOUNG_GENERATION_MB).
    assert.match(child.output(), /"thread":"workers","nice":7,"youngGenerationMb":8,"msg":"the workers' thread started"/);
  });

  test('a thread that dies is started again, and goes on with the events announced to it', async () => {
    const config = testConfig(db.url, { SWEEP_INTERVAL_MS: '3600000' });
    const store = openStore(db.url, { poolSize: 2, clock: systemClock });
    const errors: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => void errors.push(line) });
    const attempts: string[] = [];
    const thread = new ProcessingThread(config);
    thread.start(requestThreadInbox({ attemptFinished: ({ result }) => void attempts.push(result) }, logger));
    const announce = async (eventId: string) => {
      const event = stripePaymentEvent(eventId, 'payment_intent.succeeded', `pi_${eventId}`, { userId: `u_${eventId}`, courseId: 'c_thread' });
      const { id } = await store.record({ provider: 'stripe', eventId, eventType: 'payment_intent.succeeded', payload: JSON.stringify(event), headers: {} });
      thread.publisher!.publish(id);
      await waitFor(`${eventId} processed`, async () => (await store.findEvent('stripe', eventId))?.status === 'processed', 15_000);
    };
    try {
      await announce('evt_thread_before');
      // The thread's metrics cross once per turn of its event loop, after the commit the store shows:
      // a thread that dies before that turn takes its last attempt's metric with it.
      await waitFor('the first attempt counted', () => attempts.length >= 1);
      // What a crash of the thread looks like from the request thread: it exits without being asked to.
      await (thread as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
      await waitFor('the exit logged', () => errors.some((line) => line.includes("the workers' thread exited")));
      await announce('evt_thread_after');
      await waitFor('both attempts counted', () => attempts.length >= 2);
      assert.deepEqual(attempts, ['processed', 'processed'], 'both attempts counted on the request thread');
    } finally {
      await thread.stop(5000);
      await store.close();
    }
  });

  test('while deliveries queue at a busy request thread the workers yield, the seconds are counted, and the events are still processed', async () => {
    const config = testConfig(db.url, { SWEEP_INTERVAL_MS: '3600000', WORKER_YIELD_ELU: '0.5', WORKER_YIELD_IN_FLIGHT: '3', WORKER_YIELD_CONCURRENCY: '1' });
    const store = openStore(db.url, { poolSize: 2, clock: systemClock });
    const yielded: number[] = [];
    const inbox = requestThreadInbox({ workersYielded: (seconds) => void yielded.push(seconds) });
    // Three deliveries wait for their answer throughout, as under a flood.
    for (let n = 0; n < 3; n++) inbox.deliveriesInFlight.enter();
    const thread = new ProcessingThread(config);
    thread.start(inbox);
    const eventIds = ['evt_yield_1', 'evt_yield_2', 'evt_yield_3'];
    try {
      for (const eventId of eventIds) {
        const event = stripePaymentEvent(eventId, 'payment_intent.succeeded', `pi_${eventId}`, { userId: `u_${eventId}`, courseId: 'c_thread' });
        const { id } = await store.record({ provider: 'stripe', eventId, eventType: 'payment_intent.succeeded', payload: JSON.stringify(event), headers: {} });
        thread.publisher!.publish(id);
      }
      // This thread is the request thread: busy 200 ms of every 210 or so, as under that flood.
      const processed = async () => (await Promise.all(eventIds.map((eventId) => store.findEvent('stripe', eventId)))).every((event) => event?.status === 'processed');
      const deadline = Date.now() + 20_000;
      let done = false;
      while (!done && Date.now() < deadline) {
        keepBusy(200);
        await new Promise((resolve) => setTimeout(resolve, 10));
        done = await processed();
      }
      assert.ok(done, 'one worker went on while the others yielded');
      assert.ok(yielded.length > 0, 'the yield counted');
      assert.ok(
        yielded.every((seconds) => seconds >= 0.2 && seconds < 2),
        `each busy interval counted for as long as it lasted: ${yielded.join(', ')}`,
      );
    } finally {
      await thread.stop(5000);
      await store.close();
    }
  });

  test('WORKER_THREAD=false: the workers run in the request thread, as before', async () => {
    const { child, url } = await serve({ DATABASE_URL: db.url, WORKER_THREAD: 'false' });
    const delivery = stripeDelivery(stripePaymentEvent('evt_unthreaded', 'payment_intent.succeeded', 'pi_unthreaded', { userId: 'u_unthreaded', courseId: 'c_thread' }));
    assert.equal((await fetch(`${url}/webhooks/stripe`, { method: 'POST', headers: delivery.headers, body: delivery.body })).status, 200);
    const inspect = inspectDatabase(db.url, 2);
    try {
      await waitFor(
        'the event processed',
        async () => (await inspect.selectFrom('webhook_events').select('status').where('event_id', '=', 'evt_unthreaded').executeTakeFirst())?.status === 'processed',
      );
    } finally {
      await inspect.destroy();
    }
    assert.ok(
      threadNices(child.pid!).every((t) => t.nice === 0),
      'no thread lowered',
    );
    child.kill('SIGTERM');
    assert.equal(await exitOf(child), 0, child.output());
  });
});
