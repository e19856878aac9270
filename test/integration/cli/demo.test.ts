import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { runDemo } from '../../../src/cli/demo.js';
import { cli } from '../../support/cli.js';

describe('demo', () => {
  test('shows the product on a temporary SQLite store: duplicates, a burst, out-of-order events, a forgery', async () => {
    const report = await runDemo();
    const answers = Object.fromEntries(report.steps.map((s) => [s.title, s.answers]));
    assert.deepEqual(answers['Stripe retries one event 20 times at once (a concurrent burst)'], { '200 recorded': 1, '200 duplicate': 19 });
    assert.deepEqual(answers['PayU posts the success callback three times'], { '200 recorded': 1, '200 duplicate': 2 });
    assert.deepEqual(answers['Someone forges a Razorpay webhook without the secret'], { '401 invalid_signature': 1 });
    assert.match(report.databaseUrl, /^sqlite:/);

    assert.equal(report.events.length, 8, 'one row per distinct event; the forgery wrote nothing');
    assert.ok(report.events.every((e) => e.status === 'processed'));
    assert.deepEqual(
      report.payments.map((p) => `${p.provider} ${p.paymentId} ${p.status}`),
      ['stripe pi_demo_alice captured', 'stripe pi_demo_bob refunded', 'razorpay pay_demo_chitra captured', 'payu 403993715531234567 captured'],
    );
    assert.equal(report.events.find((e) => e.eventType === 'payment.authorized')?.outcome, 'ignored: payment already captured');
    assert.deepEqual(report.effects, { orders: 4, activeEnrollments: 3, revokedEnrollments: 1 });
    assert.equal(report.outbox.receipt_email, 4, 'one receipt per paid payment, however many deliveries');
  });

  test('the command prints the story and exits 0', async () => {
    const result = await cli(['demo'], {});
    assert.equal(result.code, 0, result.output);
    assert.match(result.output, /answered 200 recorded, 19x 200 duplicate/);
    assert.match(result.output, /Business effects: 4 orders, 3 active \+ 1 revoked enrollments; outbox \(one per payment and kind\): .*4 receipt_email/);
  });
});
