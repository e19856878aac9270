import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import { courseTransports } from '../../../src/course-platform/course-platform.js';
import { coursePlatformSettings } from '../../../src/course-platform/settings.js';
import { createOutboxDispatcher } from '../../../src/outbox/open-outbox.js';
import { OutboxStore } from '../../../src/outbox/outbox-store.js';
import { openStore } from '../../../src/store/open-store.js';
import type { KyselyInboxStore } from '../../../src/store/kysely-store.js';
import { exitOf, runCli, type CliProcess } from '../../support/cli.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { startHttpDownstream, startSmtpServer, type HttpDownstream, type SmtpDownstream } from '../../support/downstream.js';
import { TestClock, testConfig, waitFor } from '../../support/harness.js';
import { stripePaymentEvent, TEST_SECRETS } from '../../support/signing.js';

/**
 * A dispatcher process killed (SIGKILL) after the downstream did the work but before the row was
 * marked sent: the successor delivers again under the same key, so the downstream sees one key.
 */
const databases = await createTestDatabases();
const PAYMENT_ID = 'pi_crash';
/** Long enough that the killed dispatcher is still waiting for its answers when the test kills it. */
const TRANSPORT_TIMEOUT_MS = 60_000;

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`outbox dispatcher killed between the downstream call and marking it sent (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let smtp: SmtpDownstream;
    let fulfilment: HttpDownstream;
    let store: KyselyInboxStore;
    let child: CliProcess | undefined;
    const clock = new TestClock();
    const env = () => ({
      DATABASE_URL: db.url,
      STRIPE_WEBHOOK_SECRET: TEST_SECRETS.stripe,
      SMTP_URL: smtp.url,
      MAIL_FROM: 'receipts@shop.example',
      FULFILLMENT_URL: fulfilment.url,
      SMTP_TIMEOUT_MS: String(TRANSPORT_TIMEOUT_MS),
      FULFILLMENT_TIMEOUT_MS: String(TRANSPORT_TIMEOUT_MS),
      SWEEP_INTERVAL_MS: '50',
    });

    before(async () => {
      db = database as TestDatabase;
      smtp = await startSmtpServer();
      fulfilment = await startHttpDownstream();
      store = openStore(db.url, { poolSize: 2, clock });
      await store.migrate();
    });
    after(async () => {
      if (child?.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await store?.close();
      await smtp?.close();
      await fulfilment?.close();
      await db?.drop();
    });

    test('the successor delivers receipt and fulfilment again under the same keys; both rows end sent', async () => {
      // The first answer of each downstream never comes: the work is done, the acknowledgement is lost.
      smtp.verdict = (_mail, index) => (index === 0 ? 'hold' : 'accept');
      fulfilment.script = (_call, index) => (index === 0 ? 'hang' : undefined);

      // A recorded event the child's workers find on their own: processed, then its outbox delivered.
      const event = stripePaymentEvent('evt_crash', 'payment_intent.succeeded', PAYMENT_ID, { courseId: 'rust-101', object: { receipt_email: 'crash@buyers.example' } });
      await store.record({ provider: 'stripe', eventId: 'evt_crash', eventType: 'payment_intent.succeeded', payload: JSON.stringify(event), headers: {} });
      child = runCli(['serve'], { ...env(), HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'warn' });
      await waitFor(
        'both downstream calls made by the child',
        () => {
          if (child!.exitCode !== null) throw new Error(`serve exited:\n${child!.output()}`);
          return smtp.received.length === 1 && fulfilment.calls.length === 1;
        },
        30_000,
      );
      const leased = await store.db.selectFrom('outbox').select(['kind', 'status', 'lease_owner', 'attempts']).orderBy('kind').execute();
      assert.equal(leased.length, 2);
      for (const row of leased) {
        assert.equal(row.status, 'sending', `${row.kind} is leased while the child waits for the answer`);
        assert.match(row.lease_owner ?? '', new RegExp(`:${child.pid}:`));
      }

      child.kill('SIGKILL');
      await exitOf(child);

      // The successor: another dispatcher on the same database, once the dead one's lease has run out.
      const config = testConfig(db.url, env());
      const successor = createOutboxDispatcher(config, {
        store: new OutboxStore(store.db, clock),
        clock,
        logger: pino({ level: 'silent' }),
        owner: 'successor',
        transports: courseTransports(config, coursePlatformSettings(config)!),
      });
      assert.equal((await successor.runOnce()).due, 0, 'nothing is taken over while the lease lasts');
      clock.advance(config.processing.leaseMs + TRANSPORT_TIMEOUT_MS + 1);
      const counts = await successor.runOnce();
      await successor.stop(1000);
      assert.equal(counts.sent, 2, JSON.stringify(counts));

      const fulfilmentKey = `fulfilment:stripe:${PAYMENT_ID}`;
      assert.deepEqual(
        fulfilment.calls.map((c) => c.key),
        [fulfilmentKey, fulfilmentKey],
        'the retry reused the key',
      );
      assert.equal(fulfilment.distinctKeys().size, 1, 'one distinct key per payment');
      const messageIds = smtp.accepted.map((m) => m.messageId);
      assert.equal(messageIds.length, 2);
      assert.equal(new Set(messageIds).size, 1, 'the resent receipt carries the same Message-ID, so mail systems can drop it');

      const rows = await store.db.selectFrom('outbox').select(['kind', 'status', 'attempts', 'lease_owner', 'outcome']).orderBy('kind').execute();
      assert.deepEqual(
        rows.map((r) => [r.kind, r.status, r.attempts, r.lease_owner]),
        [
          ['fulfilment', 'sent', 2, 'successor'],
          ['receipt_email', 'sent', 2, 'successor'],
        ],
      );
      assert.match(rows[0]!.outcome ?? '', /^already done: HTTP 409/, 'the downstream recognised the key');
    });
  });
}
