import { createHmac } from 'node:crypto';

/**
 * Signing as the Standard Webhooks specification says (standardwebhooks.com): an HMAC-SHA256 over
 * `<webhook-id>.<webhook-timestamp>.<body>`, keyed with the base64-decoded part of a `whsec_` secret,
 * sent as `v1,<base64>`; one signature per secret, space-separated, so that a receiver can roll its
 * secret. Any Standard Webhooks library, in any language, verifies these headers.
 */
export function standardWebhookHeaders(id: string, timestamp: Date, body: string, secrets: readonly string[]): Record<string, string> {
  const seconds = String(Math.floor(timestamp.getTime() / 1000));
  const signatures = secrets.map((secret) => {
    const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
    return `v1,${createHmac('sha256', key).update(`${id}.${seconds}.${body}`).digest('base64')}`;
  });
  return { 'webhook-id': id, 'webhook-timestamp': seconds, 'webhook-signature': signatures.join(' ') };
}
