import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Archiver } from '../../../src/ops/archive/archiver.js';
import { HIDDEN } from '../../../src/model/secrets.js';
import { ADMIN, ADMIN_ENV } from '../../support/admin.js';
import { cli } from '../../support/cli.js';
import { describeEachService } from '../../support/store-suite.js';
import { TEST_SECRETS, payuDelivery, payuSuccessFields, razorpayDelivery, stripeDelivery, stripePaymentEvent, type SignedDelivery } from '../../support/signing.js';
import { openArchive } from '../../../src/ops/archive/open-storage.js';
import { loadConfig } from '../../../src/config/load.js';

/** Archives in directories, unencrypted: the default settings (no ARCHIVE_ENCRYPTION_KEY; S3's unused). */
const ARCHIVE_SETTINGS = loadConfig({}).operations.archive;

const CLIENT_SECRET = 'pi_shown_secret_CLIENTSECRET0123';

await describeEachService('no signature or secret reaches an output', ADMIN_ENV, (suite) => {
  const cliEnv = () => ({
    DATABASE_URL: suite.database.url,
    STRIPE_WEBHOOK_SECRET: TEST_SECRETS.stripe,
    RAZORPAY_WEBHOOK_SECRET: TEST_SECRETS.razorpay,
    PAYU_MERCHANT_KEY: TEST_SECRETS.payuKey,
    PAYU_MERCHANT_SALT: TEST_SECRETS.payuSalt,
  });
  const get = async (path: string) => {
    const response = await fetch(`${suite.service.url}${path}`, { headers: { authorization: `Bearer ${ADMIN.viewer}` } });
    assert.equal(response.status, 200, path);
    return response.text();
  };
  const deliveries: Record<string, SignedDelivery> = {
    evt_shown: stripeDelivery(stripePaymentEvent('evt_shown', 'payment_intent.succeeded', 'pi_shown', { object: { client_secret: CLIENT_SECRET } })),
    rzp_evt_shown: razorpayDelivery(
      { entity: 'event', event: 'payment.captured', payload: { payment: { entity: { id: 'pay_shown', amount: 49900, currency: 'INR', status: 'captured' } } } },
      'rzp_evt_shown',
    ),
    'txn_shown:success': payuDelivery(payuSuccessFields('txn_shown')),
  };
  /** Every signature and secret the deliveries carried, each of which no output may show. */
  const secrets = [
    /v1=([0-9a-f]{64})/.exec(deliveries.evt_shown!.headers['stripe-signature']!)![1]!,
    deliveries.rzp_evt_shown!.headers['x-razorpay-signature']!,
    new URLSearchParams(deliveries['txn_shown:success']!.body).get('hash')!,
    CLIENT_SECRET,
  ];
  const assertNoSecret = (output: string, where: string) => {
    for (const secret of secrets) assert.ok(!output.includes(secret), `${where} shows ${secret.slice(0, 12)}…`);
  };

  test('events show (text and --json), payments show, the admin API and the event page', async () => {
    const { service } = suite;
    for (const delivery of Object.values(deliveries)) assert.equal((await service.post(delivery)).status, 200);
    await service.waitUntilProcessed(3);
    for (const eventId of Object.keys(deliveries)) {
      const json = await cli(['events', 'show', eventId, '--json'], cliEnv());
      assert.equal(json.code, 0, json.output);
      assertNoSecret(json.output, `events show ${eventId} --json`);
      const detail = JSON.parse(json.output) as { headers: Record<string, string>; payload: string };
      assert.equal(detail.headers['content-type']?.split(';')[0], eventId.includes(':') ? 'application/x-www-form-urlencoded' : 'application/json', 'the other headers stay');
      const { id } = await service.db.selectFrom('webhook_events').select('id').where('event_id', '=', eventId).executeTakeFirstOrThrow();
      const api = await get(`/admin/api/events/${id}`);
      assertNoSecret(api, `GET /admin/api/events/${id}`);
      assertNoSecret(await get(`/admin/events/${id}`), `the page of event ${id}`);
      assert.equal((JSON.parse(api) as { payload: string }).payload, detail.payload, 'the API and the CLI show the same payload');
    }
    const payu = JSON.parse((await cli(['events', 'show', 'txn_shown:success', '--json'], cliEnv())).output) as { payload: string };
    assert.equal((JSON.parse(payu.payload) as { hash: string; txnid: string }).hash, HIDDEN, "PayU's hash is shown hidden, its other fields as they came");
    const text = await cli(['events', 'show', 'evt_shown'], cliEnv());
    assert.equal(text.code, 0, text.output);
    assertNoSecret(text.output, 'events show evt_shown');
    assert.match(text.output, /"client_secret": "\[hidden\]"/);
    for (const [provider, payment] of [
      ['stripe', 'pi_shown'],
      ['payu', 'txn_shown'],
    ]) {
      const shown = await cli(['payments', 'show', provider!, payment!, '--json'], cliEnv());
      assert.equal(shown.code, 0, shown.output);
      assertNoSecret(shown.output, `payments show ${provider} ${payment}`);
      assertNoSecret(await get(`/admin/api/payments/${provider}/${payment}`), `GET /admin/api/payments/${provider}/${payment}`);
      assertNoSecret(await get(`/admin/payments/${provider}/${payment}`), `the page of payment ${payment}`);
    }
  });

  test('archive search --json', async () => {
    const { created_at: receivedAt } = await suite.service.db.selectFrom('webhook_events').select('created_at').where('event_id', '=', 'evt_shown').executeTakeFirstOrThrow();
    const dir = await mkdtemp(join(tmpdir(), 'wi-secrets-'));
    try {
      assert.equal((await new Archiver(suite.service.inbox).runOnce({ archive: openArchive(dir, ARCHIVE_SETTINGS), olderThanMs: 0 })).archived, 3);
      const search = await cli(['archive', 'search', '--from', dir, '--day', receivedAt.slice(0, 10), '--json'], {});
      assert.equal(search.code, 0, search.output);
      assert.equal((JSON.parse(search.output) as unknown[]).length, 3);
      assertNoSecret(search.output, 'archive search --json');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
