import assert from 'node:assert/strict';
import { test } from 'node:test';
import { simulateEvent } from '../../../src/ops/simulator/simulated-events.js';
import { sendEvent } from '../../../src/ops/simulator/send.js';
import { cli } from '../../support/cli.js';
import { testConfig } from '../../support/harness.js';
import { TEST_SECRETS } from '../../support/signing.js';
import { describeEachService } from '../../support/store-suite.js';

await describeEachService(`send: simulated provider deliveries against a running inbox`, {}, (suite) => {
  const send = (event: ReturnType<typeof simulateEvent>, options: { repeat?: number; concurrent?: number; forged?: boolean } = {}) =>
    sendEvent(event, testConfig(suite.database.url).providers, suite.service.clock, {
      url: suite.service.url,
      repeat: options.repeat ?? 1,
      concurrent: options.concurrent ?? 1,
      forged: options.forged,
    });

  test('each provider: deliveries verify, are recorded and processed into the payment', async () => {
    const payments = { stripe: 'pi_send_1', razorpay: 'pay_send_1', payu: '70000000001' } as const;
    const types = { stripe: 'payment_intent.succeeded', razorpay: 'payment.captured', payu: 'success' } as const;
    for (const provider of ['stripe', 'razorpay', 'payu'] as const) {
      const report = await send(simulateEvent(provider, types[provider], { paymentId: payments[provider], userId: `u_send_${provider}`, courseId: 'c_send' }));
      assert.deepEqual(report.answers, { '200 recorded': 1 }, provider);
    }
    await suite.service.waitUntilProcessed(3);
    const rows = await suite.service.db.selectFrom('payments').select(['provider', 'payment_id', 'status', 'metadata']).orderBy('provider').execute();
    // The user id in the metadata field each provider carries it in (PayU's udf1).
    const userOf = ({ provider, metadata }: (typeof rows)[number]) => (JSON.parse(metadata ?? '{}') as Record<string, string>)[provider === 'payu' ? 'udf1' : 'user_id'];
    assert.deepEqual(
      rows.map((row) => ({ provider: row.provider, payment_id: row.payment_id, status: row.status, user_id: userOf(row) })),
      [
        { provider: 'payu', payment_id: '70000000001', status: 'captured', user_id: 'u_send_payu' },
        { provider: 'razorpay', payment_id: 'pay_send_1', status: 'captured', user_id: 'u_send_razorpay' },
        { provider: 'stripe', payment_id: 'pi_send_1', status: 'captured', user_id: 'u_send_stripe' },
      ],
    );
  });

  test('--repeat and --concurrent: one recorded, the rest duplicates; a forged delivery is refused', async () => {
    const event = simulateEvent('razorpay', 'payment.authorized', { paymentId: 'pay_send_storm' });
    const report = await send(event, { repeat: 3, concurrent: 4 });
    assert.equal(report.deliveries.length, 12);
    assert.deepEqual(report.answers, { '200 recorded': 1, '200 duplicate': 11 });
    const forged = await send(simulateEvent('payu', 'success'), { forged: true });
    assert.deepEqual(forged.answers, { '401 invalid_signature': 1 });
  });

  test('the CLI signs with the configured secrets and reports the answers; exit 1 when an answer is unexpected', async () => {
    const env = { STRIPE_WEBHOOK_SECRET: TEST_SECRETS.stripe, DATABASE_URL: suite.database.url };
    const sent = await cli(['send', 'stripe', 'charge.succeeded', '--url', suite.service.url, '--repeat', '2', '--concurrent', '3', '--payment', 'pi_send_cli'], env);
    assert.equal(sent.code, 0, sent.output);
    assert.match(sent.output, /200 recorded +1\n200 duplicate +5\n/);
    const wrongSecret = await cli(['send', 'stripe', 'charge.succeeded', '--url', suite.service.url], { ...env, STRIPE_WEBHOOK_SECRET: 'whsec_not_the_endpoints' });
    assert.equal(wrongSecret.code, 1, wrongSecret.output);
    assert.match(wrongSecret.output, /401 invalid_signature +1/);
  });
});
