import nodemailer, { type NodemailerError } from 'nodemailer';
import addressparser from 'nodemailer/lib/addressparser';
import type { SmtpSettings } from '../config/settings.js';
import { describeError, PermanentError } from '../errors.js';
import { readPaymentEffect } from './payment-effect.js';
import type { OutboxTransport } from '../outbox/transport.js';
import type { PaymentEffect } from './handlers.js';

export interface ReceiptContent {
  subject: string;
  text: string;
  html: string;
}

/**
 * The amount in the currency's own decimals (JPY none, USD two, KWD three), with the ISO code so no
 * reader mistakes one dollar for another.
 */
export function formatAmount(amountMinor: number | null, currency: string | null): string {
  if (amountMinor === null || currency === null) return 'not reported by the payment provider';
  let format: Intl.NumberFormat;
  try {
    format = new Intl.NumberFormat('en', { style: 'currency', currency, currencyDisplay: 'code' });
  } catch {
    return `${amountMinor} (smallest unit of ${currency})`;
  }
  const decimals = format.resolvedOptions().maximumFractionDigits ?? 2;
  return format.format(amountMinor / 10 ** decimals);
}

/**
 * Stable per receipt: mail systems that deduplicate by Message-ID drop a resend after a crash.
 * base64url keeps the key reversible and inside the characters a Message-ID allows.
 */
export function receiptMessageId(idempotencyKey: string, senderDomain: string): string {
  return `<${Buffer.from(idempotencyKey).toString('base64url')}@${senderDomain}>`;
}

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escapeHtml(value: string): string {
  return value.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]!);
}

export function receiptContent(effect: PaymentEffect): ReceiptContent {
  const course = effect.courseId ?? 'your course';
  const rows: Array<[string, string]> = [
    ['Course', course],
    ['Amount', formatAmount(effect.amount, effect.currency)],
    ['Payment', `${effect.paymentId} (${effect.provider})`],
  ];
  const width = Math.max(...rows.map(([label]) => label.length)) + 2;
  const text = ['Thank you for your purchase.', '', ...rows.map(([label, value]) => `${`${label}:`.padEnd(width)}${value}`), '', 'Keep this e-mail as your receipt.', ''].join(
    '\n',
  );
  const html = [
    '<!doctype html>',
    '<html><body style="font-family: sans-serif">',
    '<p>Thank you for your purchase.</p>',
    '<table cellpadding="4">',
    ...rows.map(([label, value]) => `<tr><th align="left">${label}</th><td>${escapeHtml(value)}</td></tr>`),
    '</table>',
    '<p>Keep this e-mail as your receipt.</p>',
    '</body></html>',
  ].join('\n');
  return { subject: `Your receipt for ${course}`, text, html };
}

/**
 * Receipts over SMTP (the inbox's SMTP_URL) through a small connection pool, sent `from` the course
 * platform's sender (MAIL_FROM). A permanent SMTP rejection (5xx, a refused address) fails the row
 * for good; connection problems and 4xx replies are retried.
 */
export function smtpReceipts(settings: SmtpSettings, from: string, maxConnections: number): OutboxTransport {
  const mailer = nodemailer.createTransport({
    url: settings.url,
    pool: true,
    maxConnections,
    connectionTimeout: settings.timeoutMs,
    greetingTimeout: settings.timeoutMs,
    socketTimeout: settings.timeoutMs,
  });
  const senderDomain = addressparser(from, { flatten: true })[0]!.address.split('@')[1]!;

  return {
    timeoutMs: settings.timeoutMs,
    async deliver(message) {
      const effect = readPaymentEffect(message.payload);
      if (effect.email === null) return { status: 'skipped', outcome: 'skipped: the payment has no customer e-mail address' };
      const { subject, text, html } = receiptContent(effect);
      try {
        const info = await mailer.sendMail({
          from,
          to: effect.email,
          subject,
          text,
          html,
          messageId: receiptMessageId(message.idempotencyKey, senderDomain),
        });
        return { status: 'sent', outcome: `sent: ${info.response}` };
      } catch (error) {
        const smtp = error as NodemailerError;
        if (smtp.permanent === true || smtp.code === 'EENVELOPE') throw new PermanentError(`SMTP refused the receipt: ${describeError(smtp)}`);
        throw error;
      }
    },
    close: () => mailer.close(),
  };
}
