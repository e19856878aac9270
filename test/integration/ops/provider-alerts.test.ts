import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { pino } from 'pino';
import type { ProviderAlertSettings } from '../../../src/config/settings.js';
import { ProviderAnswerStats, minuteOf } from '../../../src/observability/answer-stats.js';
import { findProviderAlerts } from '../../../src/ops/provider-alerts.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness, TestClock, waitFor } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const databases = await createTestDatabases();
const HOUR_MS = 3_600_000;
const SETTINGS: ProviderAlertSettings = { cron: null, non2xxForMs: 2 * HOUR_MS, signatureFailureShare: 0.5, signatureFailureMinCount: 10, providerSilentForMs: null };

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`provider alerts from every process's answer counts (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let service: Harness;
    const hoursAgo = (hours: number) => minuteOf(new Date(service.clock.now().getTime() - hours * HOUR_MS));
    const seed = (provider: string, answer: '2xx' | '5xx' | 'signature' | '4xx', hours: number, count = 1) =>
      service.db
        .insertInto('provider_answer_stats')
        .values({ provider, answer, minute: hoursAgo(hours), count })
        .execute();
    const alertsOf = async (settings: Partial<ProviderAlertSettings> = {}) =>
      (await findProviderAlerts(service.db, service.clock, { ...SETTINGS, ...settings })).map((alert) => `${alert.provider}:${alert.rule}`);

    before(async () => {
      db = database as TestDatabase;
      service = await Harness.start(db.url);
    });
    after(async () => {
      await service?.close();
      await db?.drop();
    });

    test('answers are counted per minute in the database, and several processes add up', async () => {
      const clock = new TestClock();
      const logger = pino({ level: 'silent' });
      const processes = [new ProviderAnswerStats(service.db, clock, logger), new ProviderAnswerStats(service.db, clock, logger)];
      for (const stats of processes) for (let i = 0; i < 3; i++) stats.add('payu', 'unavailable');
      await Promise.all(processes.map((stats) => stats.flush()));
      const rows = await service.db.selectFrom('provider_answer_stats').select(['answer', 'count']).where('provider', '=', 'payu').execute();
      assert.deepEqual(
        rows.map((row) => [row.answer, Number(row.count)]),
        [['5xx', 6]],
      );
      await service.db.deleteFrom('provider_answer_stats').execute();
    });

    test("a provider's share of signature failures above the threshold alerts; below the minimum count it does not", async () => {
      const good = stripeDelivery(stripePaymentEvent('evt_alert_ok', 'payment_intent.succeeded', 'pi_alert'));
      assert.equal((await service.post(good)).status, 200);
      for (let i = 0; i < 11; i++)
        assert.equal(
          (await service.post(stripeDelivery(stripePaymentEvent(`evt_bad_${i}`, 'payment_intent.succeeded', 'pi_bad'), { secret: 'whsec_rotated_elsewhere' }))).status,
          401,
        );
      await waitFor('the answers counted in the database', async () => {
        const rows = await service.db.selectFrom('provider_answer_stats').select('count').where('provider', '=', 'stripe').execute();
        return rows.reduce((sum, row) => sum + Number(row.count), 0) >= 12;
      });
      assert.deepEqual(await alertsOf(), ['stripe:signature_failures']);
      assert.deepEqual(await alertsOf({ signatureFailureMinCount: 20 }), []);
      await service.db.deleteFrom('provider_answer_stats').execute();
    });

    test('only non-2xx answers for longer than ALERT_NON_2XX_FOR alerts; a 2xx since ends it', async () => {
      await seed('razorpay', '2xx', 5);
      await seed('razorpay', '5xx', 3);
      await seed('razorpay', '4xx', 0.1);
      await seed('payu', '5xx', 1);
      assert.deepEqual(await alertsOf(), ['razorpay:non_2xx'], 'payu fails for one hour only');
      await seed('razorpay', '2xx', 0.05);
      assert.deepEqual(await alertsOf(), []);
    });

    test('silence alerts only when ALERT_PROVIDER_SILENT_FOR is set', async () => {
      assert.deepEqual(await alertsOf(), []);
      await seed('stripe', '2xx', 3);
      const silent = await alertsOf({ providerSilentForMs: 2 * HOUR_MS });
      // Razorpay and PayU delivered within 2h (a failed delivery is a delivery too); Stripe 3h ago.
      assert.deepEqual(silent, ['stripe:silent']);
    });
  });
}
