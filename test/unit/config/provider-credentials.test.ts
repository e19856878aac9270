import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../../../src/config/load.js';

describe('provider credentials: nothing blank is taken for configured', () => {
  test('a blank or whitespace-only secret leaves its provider unconfigured (503), or names the missing partner', () => {
    const config = loadConfig({ STRIPE_WEBHOOK_SECRET: '   ', RAZORPAY_WEBHOOK_SECRET: '\t', STRIPE_API_KEY: ' ', RAZORPAY_KEY_ID: '', RAZORPAY_KEY_SECRET: '  ' });
    assert.deepEqual(
      [config.providers.stripe, config.providers.razorpay, config.operations.reconcile.apis.stripe, config.operations.reconcile.apis.razorpay],
      [null, null, null, null],
    );
    assert.throws(
      () => loadConfig({ PAYU_MERCHANT_KEY: ' ', PAYU_MERCHANT_SALT: 'TestSalt0123456789abcdefGHIJKLmn' }),
      /PAYU_MERCHANT_KEY must be set when PAYU_MERCHANT_SALT is set/,
    );
    assert.throws(() => loadConfig({ RAZORPAY_WEBHOOK_SECRET: ' , ' }), /RAZORPAY_WEBHOOK_SECRET holds no secret/);
  });

  test('whsec_ with nothing after it is refused, naming the variable; a whole secret is taken', () => {
    assert.throws(() => loadConfig({ STRIPE_WEBHOOK_SECRET: 'whsec_' }), /STRIPE_WEBHOOK_SECRET holds whsec_ with nothing after it/);
    assert.deepEqual(loadConfig({ STRIPE_WEBHOOK_SECRET: 'whsec_a' }).providers.stripe?.secrets, ['whsec_a']);
  });

  test('a Stripe API key that is only its prefix is refused; a whole one is taken', () => {
    for (const key of ['sk_', 'rk_', 'sk_test_', 'rk_live_']) assert.throws(() => loadConfig({ STRIPE_API_KEY: key }), /STRIPE_API_KEY holds only the prefix of a key/);
    assert.equal(loadConfig({ STRIPE_API_KEY: 'rk_test_51abc' }).operations.reconcile.apis.stripe?.apiKey, 'rk_test_51abc');
  });
});

describe("the providers' API bases: the API key never travels in clear", () => {
  const bases = (env: Record<string, string>) => {
    const { apis } = loadConfig({ STRIPE_API_KEY: 'rk_test_51abc', RAZORPAY_KEY_ID: 'rzp_test_id', RAZORPAY_KEY_SECRET: 'secret', ...env }).operations.reconcile;
    return [apis.stripe?.apiBase, apis.razorpay?.apiBase];
  };

  test('http:// to a loopback address is accepted (a local fake): 127.0.0.0/8, ::1, localhost', () => {
    for (const base of ['http://127.0.0.1:12345', 'http://127.8.9.10', 'http://[::1]:8080', 'http://localhost:9000', 'http://LOCALHOST']) {
      assert.deepEqual(bases({ STRIPE_API_BASE: base, RAZORPAY_API_BASE: base }), [base, base]);
    }
  });

  test('https:// anywhere is accepted', () => {
    assert.deepEqual(bases({ STRIPE_API_BASE: 'https://stripe-mock.internal:12111' }), ['https://stripe-mock.internal:12111', 'https://api.razorpay.com']);
  });

  for (const [variable, base] of [
    ['STRIPE_API_BASE', 'http://api.stripe.com'],
    ['RAZORPAY_API_BASE', 'http://10.0.0.5:8080'],
    ['PAYU_API_BASE', 'http://info.payu.in'],
    ['STRIPE_API_BASE', 'http://127.0.0.1.nip.io'],
    ['STRIPE_API_BASE', 'http://localhost.example.com'],
    ['RAZORPAY_API_BASE', 'http://[::2]'],
    ['PAYU_API_BASE', 'http://[::ffff:10.0.0.1]'],
  ]) {
    test(`${variable}=${base} is refused at start, naming the variable`, () => {
      assert.throws(() => loadConfig({ [variable!]: base! }), new RegExp(`${variable} must be an https:// URL: over http:// the API key would travel in clear`));
    });
  }
});
