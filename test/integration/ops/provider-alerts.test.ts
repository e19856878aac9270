import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import type { ProviderAlertSettings } from '../../../src/config/settings.js';
import { DeliveryStatsRecorder, minuteOf } from '../../../src/observability/delivery-stats.js';
import type { DeliveryResult } from '../../../src/observability/metrics.js';
import { PrometheusMetrics } from '../../../src/observability/prometheus.js';
import { findProviderAlerts } from '../../../src/ops/provider-alerts.js';
import { TestClock, waitFor } from '../../support/harness.js';
import { describeEachService } from '../../support/store-suite.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const HOUR_MS = 3_600_000;
const SETTINGS: ProviderAlertSettings = { cron: null, non2xxForMs: 2 * HOUR_MS, signatureFailureShare: 0.5, signatureFailureMinCount: 10, providerSilentForMs: null };

await describeEachService(`provider alerts from every process's answer counts`, {}, (suite) => {
  const hoursAgo = (hours: number) => minuteOf(new Date(suite.service.clock.now().getTime() - hours * HOUR_MS));
  const seed = (provider: string, result: DeliveryResult, hours: number, deliveries = 1) =>
    suite.service.db
      .insertInto('delivery_stats')
      .values({ provider, result, minute: hoursAgo(hours), deliveries, ack_ms_total: 0, ack_ms_max: 0 })
      .execute();
  const alertsOf = async (settings: Partial<ProviderAlertSettings> = {}) =>
    (await findProviderAlerts(suite.service.db, suite.service.clock, { ...SETTINGS, ...settings })).map((alert) => `${alert.provider}:${alert.rule}`);

  test('answers are counted per minute in the database, and several processes add up', async () => {
    const clock = new TestClock();
    const logger = pino({ level: 'silent' });
    const recorder = () =>
      new DeliveryStatsRecorder(new PrometheusMetrics({ stats: async () => ({}) as never, clock, logger }), suite.service.db, clock, logger, async () => ({
        due: 0,
        oldestPendingSeconds: null,
        failed: 0,
        stuck: 0,
        outboxFailed: 0,
      }));
    const processes = [recorder(), recorder()];
    for (const stats of processes) for (let i = 0; i < 3; i++) stats.deliveryAnswered('payu', 'unavailable', 0.01);
    // A path naming no provider of ours is counted as unknown, never as a row of its own.
    processes[0]!.deliveryAnswered('<script>', 'bad_request', 0.01);
    await Promise.all(processes.map((stats) => stats.flush()));
    const rows = await suite.service.db
      .selectFrom('delivery_stats')
      .select(['provider', 'result', 'deliveries'])
      .where('provider', 'in', ['payu', 'unknown', '<script>'])
      .orderBy('provider')
      .execute();
    assert.deepEqual(
      rows.map((row) => [row.provider, row.result, Number(row.deliveries)]),
      [
        ['payu', 'unavailable', 6],
        ['unknown', 'bad_request', 1],
      ],
    );
    await suite.service.db.deleteFrom('delivery_stats').execute();
  });

  test("a provider's share of signature failures above the threshold alerts; below the minimum count it does not", async () => {
    const good = stripeDelivery(stripePaymentEvent('evt_alert_ok', 'payment_intent.succeeded', 'pi_alert'));
    assert.equal((await suite.service.post(good)).status, 200);
    for (let i = 0; i < 11; i++)
      assert.equal(
        (await suite.service.post(stripeDelivery(stripePaymentEvent(`evt_bad_${i}`, 'payment_intent.succeeded', 'pi_bad'), { secret: 'whsec_rotated_elsewhere' }))).status,
        401,
      );
    await waitFor('the answers counted in the database', async () => {
      if (suite.service.inbox.metrics instanceof DeliveryStatsRecorder) await suite.service.inbox.metrics.flush();
      const rows = await suite.service.db.selectFrom('delivery_stats').select('deliveries').where('provider', '=', 'stripe').execute();
      return rows.reduce((sum, row) => sum + Number(row.deliveries), 0) >= 12;
    });
    assert.deepEqual(await alertsOf(), ['stripe:signature_failures']);
    assert.deepEqual(await alertsOf({ signatureFailureMinCount: 20 }), []);
    await suite.service.db.deleteFrom('delivery_stats').execute();
  });

  test('only non-2xx answers for longer than ALERT_NON_2XX_FOR alerts; a 2xx since ends it', async () => {
    await seed('razorpay', 'accepted', 5);
    await seed('razorpay', 'unavailable', 3);
    await seed('razorpay', 'bad_request', 0.1);
    await seed('payu', 'error', 1);
    assert.deepEqual(await alertsOf(), ['razorpay:non_2xx'], 'payu fails for one hour only');
    await seed('razorpay', 'duplicate', 0.05);
    assert.deepEqual(await alertsOf(), []);
  });

  test('silence alerts only when ALERT_PROVIDER_SILENT_FOR is set', async () => {
    assert.deepEqual(await alertsOf(), []);
    await seed('stripe', 'accepted', 3);
    const silent = await alertsOf({ providerSilentForMs: 2 * HOUR_MS });
    // Razorpay and PayU delivered within 2h (a failed delivery is a delivery too); Stripe 3h ago.
    assert.deepEqual(silent, ['stripe:silent']);
  });
});
