import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { loadConfig } from '../../../src/config/load.js';
import { coursePlatform } from '../../../src/course-platform/course-platform.js';
import { coursePlatformSettings } from '../../../src/course-platform/settings.js';
import { ConfigError } from '../../../src/errors.js';
import { formatAmount, receiptContent, receiptMessageId } from '../../../src/course-platform/receipt-email.js';

/** The inbox's configuration with the course platform's settings, as the service reads them. */
const withCoursePlatform = (env: Record<string, string>) => loadConfig(env, { domains: [coursePlatform] });

function problems(env: Record<string, string>): string[] {
  try {
    withCoursePlatform(env);
  } catch (error) {
    assert.ok(error instanceof ConfigError);
    return error.problems;
  }
  return [];
}

describe('receipt e-mail content', () => {
  test('amounts use the currency’s own decimals and its ISO code', () => {
    const nbsp = (text: string) => text.replace(/\u00a0/g, ' ');
    assert.equal(nbsp(formatAmount(4900, 'USD')), 'USD 49.00');
    assert.equal(nbsp(formatAmount(123456, 'INR')), 'INR 1,234.56');
    assert.equal(nbsp(formatAmount(5000, 'JPY')), 'JPY 5,000', 'yen has no minor unit');
    assert.equal(nbsp(formatAmount(1234, 'KWD')), 'KWD 1.234', 'dinar has three decimals');
    assert.equal(formatAmount(null, 'USD'), 'not reported by the payment provider');
    assert.equal(formatAmount(4900, null), 'not reported by the payment provider');
  });

  test('the Message-ID is a function of the idempotency key alone, in Message-ID characters', () => {
    const id = receiptMessageId('receipt:stripe:pi_ABC', 'shop.example');
    assert.equal(id, receiptMessageId('receipt:stripe:pi_ABC', 'shop.example'), 'stable across attempts');
    assert.notEqual(id, receiptMessageId('receipt:stripe:pi_abc', 'shop.example'), 'keys differing in case stay different');
    assert.match(id, /^<[A-Za-z0-9_-]+@shop\.example>$/);
    assert.equal(Buffer.from(id.slice(1, id.indexOf('@')), 'base64url').toString(), 'receipt:stripe:pi_ABC', 'reversible to the key');
  });

  test('plain text and HTML name the course, the amount and the payment; HTML escapes what it shows', () => {
    const receipt = receiptContent({ provider: 'stripe', paymentId: 'pi_1', userId: 'u_1', courseId: '<b>Rust & Go</b>', amount: 4900, currency: 'USD', email: 'a@b.example' });
    assert.equal(receipt.subject, 'Your receipt for <b>Rust & Go</b>');
    assert.match(receipt.text, /^Course: {2}<b>Rust & Go<\/b>$/m);
    assert.match(receipt.text, /^Amount: {2}USD\u00a049\.00$/m);
    assert.match(receipt.text, /^Payment: pi_1 \(stripe\)$/m);
    assert.ok(receipt.html.includes('&lt;b&gt;Rust &amp; Go&lt;/b&gt;'), receipt.html);
    assert.ok(!receipt.html.includes('<b>Rust'), 'no markup from the payment reaches the HTML');
  });
});

describe('outbox configuration', () => {
  test('nothing configured: both transports off', () => {
    const config = withCoursePlatform({});
    assert.deepEqual(config.outbox, { concurrency: 4, smtp: null });
    const { mailFrom, fulfilment } = coursePlatformSettings(config)!;
    assert.deepEqual({ mailFrom, fulfilment }, { mailFrom: null, fulfilment: null });
  });

  test("SMTP (the inbox's mail transport), the receipts' sender and fulfilment (the course platform's), with their default timeouts", () => {
    const config = withCoursePlatform({
      SMTP_URL: 'smtps://u:p@mail.example:465',
      MAIL_FROM: 'Shop <receipts@shop.example>',
      FULFILLMENT_URL: 'https://api.example/fulfil',
      OUTBOX_CONCURRENCY: '8',
    });
    assert.deepEqual(config.outbox, { concurrency: 8, smtp: { url: 'smtps://u:p@mail.example:465', timeoutMs: 30_000 } });
    const { mailFrom, fulfilment } = coursePlatformSettings(config)!;
    assert.deepEqual({ mailFrom, fulfilment }, { mailFrom: 'Shop <receipts@shop.example>', fulfilment: { url: 'https://api.example/fulfil', timeoutMs: 10_000 } });
  });

  test('SMTP_URL and MAIL_FROM come together', () => {
    assert.deepEqual(problems({ SMTP_URL: 'smtp://mail.example' }), ["MAIL_FROM must be set when SMTP_URL is set (the receipts' sender address)"]);
    assert.deepEqual(problems({ MAIL_FROM: 'receipts@shop.example' }), ['SMTP_URL must be set when MAIL_FROM is set']);
  });

  test('without the course platform, SMTP_URL is the mail transport alone: no sender is asked for', () => {
    assert.deepEqual(loadConfig({ SMTP_URL: 'smtp://mail.example' }).outbox.smtp, { url: 'smtp://mail.example', timeoutMs: 30_000 });
  });
});
