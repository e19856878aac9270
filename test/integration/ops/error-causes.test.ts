import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { coursePlatform } from '../../../src/course-platform/course-platform.js';
import type { PaymentHandlers } from '../../../src/domain/applier.js';
import { simulateEvent } from '../../../src/ops/simulator/simulated-events.js';
import { sendEvent } from '../../../src/ops/simulator/send.js';
import { toDbTime } from '../../../src/db/schema.js';
import { cli } from '../../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';
import { Harness, testConfig, waitFor } from '../../support/harness.js';
import { freePort } from '../../support/processes.js';
import { stripeDelivery, stripePaymentEvent, TEST_SECRETS } from '../../support/signing.js';

// How an error is kept does not depend on the store: one store is enough.
const database = (await createTestDatabase('sqlite')) as TestDatabase;

/** A handler whose dependency fails the way drivers and fetch do: the reason is in `cause`. */
const catalogueDown: PaymentHandlers = {
  captured: [
    () => {
      throw new Error('course catalogue unavailable', { cause: Object.assign(new Error('connect ETIMEDOUT 10.0.0.7:5432'), { code: 'ETIMEDOUT' }) });
    },
  ],
};

describe('the cause of an error is kept where the error is stored, logged and printed', () => {
  let closedPort: number;
  let server: Harness;
  const logLines: Array<{ msg: string; error?: string; err?: { message: string } }> = [];

  before(async () => {
    closedPort = await freePort();
    const logger = pino(
      { level: 'info' },
      new Writable({ write: (chunk: Buffer, _encoding, done) => (logLines.push(JSON.parse(chunk.toString()) as (typeof logLines)[number]), done()) }),
    );
    server = await Harness.start(
      database.url,
      // Retries far apart: each row and event keeps its first failure for the test to read.
      { FULFILLMENT_URL: `http://127.0.0.1:${closedPort}/orders`, RETRY_BASE_SECONDS: '600', SWEEP_INTERVAL_MS: '50' },
      // The course platform brings the fulfilment transport; the handler fails every capture.
      { logger, domains: [coursePlatform], handlers: catalogueDown },
    );
    await server.post(stripeDelivery(stripePaymentEvent('evt_catalogue_down', 'payment_intent.succeeded', 'pi_catalogue_down')));
  });
  after(async () => {
    await server?.close();
    await database.drop();
  });

  test("a fulfilment call to a closed port: the outbox row's last_error and the log say ECONNREFUSED and the address", async () => {
    const now = toDbTime(server.clock.now());
    const payload = JSON.stringify({ provider: 'stripe', paymentId: 'pi_closed_port' });
    await server.db
      .insertInto('outbox')
      .values({ idempotency_key: 'fulfilment:stripe:pi_closed_port', kind: 'fulfilment', payload, status: 'pending', attempts: 0, next_attempt_at: now, created_at: now })
      .execute();
    const failed = async () =>
      (await server.db.selectFrom('outbox').select('last_error').where('idempotency_key', '=', 'fulfilment:stripe:pi_closed_port').executeTakeFirst())?.last_error;
    await waitFor('the fulfilment attempt recorded', async () => (await failed()) != null);
    assert.equal(await failed(), `fetch failed: connect ECONNREFUSED 127.0.0.1:${closedPort}`);
    const logged = logLines.find((line) => line.msg === 'outbox delivery failed; will retry');
    assert.equal(logged?.error, `fetch failed: connect ECONNREFUSED 127.0.0.1:${closedPort}`);
  });

  test("a handler's failure: the event's last_error keeps the cause", async () => {
    const event = await server.inbox.store.findEvent('stripe', 'evt_catalogue_down');
    assert.ok(event);
    await waitFor('the failed attempt recorded', async () => (await server.inbox.store.eventState(event.id))?.lastError != null);
    assert.equal((await server.inbox.store.eventState(event.id))?.lastError, 'Error: course catalogue unavailable: connect ETIMEDOUT 10.0.0.7:5432');
  });

  test('send to a closed port reports the reason, not just "fetch failed"', async () => {
    const report = await sendEvent(simulateEvent('stripe', 'payment_intent.succeeded', {}, new Date()), testConfig(database.url).providers, server.clock, {
      url: `http://127.0.0.1:${closedPort}`,
      repeat: 1,
      concurrent: 1,
    });
    assert.deepEqual(report.answers, { [`no answer (fetch failed: connect ECONNREFUSED 127.0.0.1:${closedPort})`]: 1 });
    const printed = await cli(['send', 'stripe', 'payment_intent.succeeded', '--url', `http://127.0.0.1:${closedPort}`], { STRIPE_WEBHOOK_SECRET: TEST_SECRETS.stripe });
    assert.equal(printed.code, 1, printed.output);
    assert.match(printed.output, new RegExp(`^no answer \\(fetch failed: connect ECONNREFUSED 127\\.0\\.0\\.1:${closedPort}\\) +1$`, 'm'), 'printed whole, not cut');
  });
});
