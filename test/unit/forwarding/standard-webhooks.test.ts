import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Webhook, WebhookVerificationError } from 'standardwebhooks';
import { standardWebhookHeaders } from '../../../src/forwarding/standard-webhooks.js';
import { FORWARD_SECRETS } from '../../support/forwarded.js';

const body = JSON.stringify({ id: 'msg_0123456789abcdef0123456789abcdef', type: 'payment.captured', note: 'bytes: é😀 "quoted" \\' });

test('the signature is the one the standardwebhooks package computes, one per secret', () => {
  const at = new Date('2026-12-02T10:00:00.999Z');
  const headers = standardWebhookHeaders('msg_1', at, body, FORWARD_SECRETS);
  assert.equal(headers['webhook-id'], 'msg_1');
  assert.equal(headers['webhook-timestamp'], String(Math.floor(at.getTime() / 1000)));
  assert.equal(headers['webhook-signature'], FORWARD_SECRETS.map((secret) => new Webhook(secret).sign('msg_1', at, body)).join(' '));
});

test('a receiver verifies it with either secret, and refuses a changed body, id or timestamp', () => {
  const headers = standardWebhookHeaders('msg_2', new Date(), body, FORWARD_SECRETS);
  for (const secret of FORWARD_SECRETS) assert.deepEqual(new Webhook(secret).verify(body, headers), JSON.parse(body));
  const receiver = new Webhook(FORWARD_SECRETS[0]);
  assert.throws(() => receiver.verify(body.replace('captured', 'refunded'), headers), WebhookVerificationError);
  assert.throws(() => receiver.verify(body, { ...headers, 'webhook-id': 'msg_3' }), WebhookVerificationError);
  assert.throws(() => receiver.verify(body, { ...headers, 'webhook-timestamp': String(Number(headers['webhook-timestamp']) - 1) }), WebhookVerificationError);
});
