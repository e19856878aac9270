import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { Harness, serviceInbox, testConfig } from '../../support/harness.js';
import { freePort } from '../../support/processes.js';
import { createTestStream, type TestStream } from '../../support/services.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const GROUP = 'webhook-inbox-workers';
const database = await createTestDatabase();
const redis = 'skip' in database ? database : await createTestStream();
const unavailable = ('skip' in database && database) || ('skip' in redis && redis);

function captured(n: number | string) {
  return stripeDelivery(stripePaymentEvent(`evt_rs_${n}`, 'payment_intent.succeeded', `pi_rs_${n}`, { userId: `u_rs_${n}`, courseId: 'c_rs' }));
}

describe('the Redis Streams transport', { skip: unavailable && unavailable.skip }, () => {
  let db: TestDatabase;
  let stream: TestStream;
  let client: Redis;
  let harness: Harness;
  let ghostEventId: number;

  before(async () => {
    db = database as TestDatabase;
    stream = redis as TestStream;
    client = new Redis(stream.url);
    const env = { REDIS_URL: stream.url, REDIS_STREAM: stream.stream, LEASE_SECONDS: '1', SWEEP_INTERVAL_MS: '200' };

    // A consumer that read an announcement and died before acknowledging it.
    const recorder = serviceInbox(testConfig(db.url));
    await recorder.store.migrate();
    const ghost = captured('ghost');
    ghostEventId = (await recorder.store.record(recorder.providers.verifier('stripe').verify({ headers: ghost.headers, body: Buffer.from(ghost.body), receivedAt: new Date() })))
      .id;
    await recorder.store.close();
    await client.xgroup('CREATE', stream.stream, GROUP, '0', 'MKSTREAM');
    await client.xadd(stream.stream, '*', 'event', String(ghostEventId));
    await client.xreadgroup('GROUP', GROUP, 'ghost', 'COUNT', 1, 'STREAMS', stream.stream, '>');

    harness = await Harness.start(db.url, env);
  });
  after(async () => {
    await harness?.close();
    client?.disconnect();
    await stream?.drop();
    await db?.drop();
  });

  test('announcements are read through the consumer group and acknowledged after processing', async () => {
    assert.equal(harness.inbox.queue.publisher?.transport, 'redis-streams');
    assert.equal(harness.inbox.queue.subscriber?.transport, 'redis-streams');
    const responses = await Promise.all(Array.from({ length: 20 }, (_, n) => harness.post(captured(n))));
    assert.ok(responses.every((r) => r.status === 200));
    await harness.waitFor('20 events processed', async () => (await harness.countRows('webhook_events', 'processed')) >= 20);
    await harness.waitFor('every entry acknowledged', async () => {
      const group = await stream.group();
      return group !== null && group.entriesRead >= 21 && group.pending === 0;
    });
  });

  test('an entry left pending by a dead consumer is claimed after the lease and acknowledged', async () => {
    await harness.waitFor('the ghost entry to be taken over', async () => (await client.xpending(stream.stream, GROUP, '-', '+', 10, 'ghost')).length === 0);
    await harness.waitFor('the ghost event processed', async () => (await harness.inbox.store.eventState(ghostEventId))?.status === 'processed');
    assert.equal((await stream.group())?.pending, 0);
    assert.equal((await harness.inbox.store.eventState(ghostEventId))?.attempts, 1);
  });
});

describe('Redis down or hanging: deliveries are acknowledged without waiting for it', { skip: 'skip' in database && database.skip }, () => {
  let db: TestDatabase;
  const sockets: Socket[] = [];
  const silent = createServer((socket) => sockets.push(socket));

  before(async () => {
    db = database as TestDatabase;
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    silent.close();
    await db?.drop();
  });

  for (const [situation, url] of [
    ['refusing connections', async () => `redis://127.0.0.1:${await freePort()}`],
    ['accepting but never answering', async () => `redis://127.0.0.1:${(silent.address() as { port: number }).port}`],
  ] as const) {
    test(`Redis ${situation}: 200 at once, the sweeper processes the event`, async () => {
      const harness = await Harness.start(db.url, { REDIS_URL: await url(), REDIS_STREAM: 'unused' });
      try {
        const started = performance.now();
        const response = await harness.post(captured(situation.split(' ')[0]!));
        assert.equal(response.status, 200);
        assert.ok(performance.now() - started < 5000, 'answered without waiting for Redis');
        await harness.waitFor('processed by the sweeper', async () => (await harness.inbox.store.findEvent('stripe', `evt_rs_${situation.split(' ')[0]}`))?.status === 'processed');
      } finally {
        await harness.close();
      }
    });
  }
});
