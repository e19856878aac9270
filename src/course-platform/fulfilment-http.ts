import { headerValueOf } from '../outbox/header-value.js';
import { postDelivery } from '../outbox/http-post.js';
import type { OutboxTransport } from '../outbox/transport.js';
import { readPaymentEffect } from './payment-effect.js';
import type { FulfilmentSettings } from './settings.js';

export type FulfilmentAction = 'fulfil' | 'cancel';

/**
 * Fulfilment requests: POST JSON with an `Idempotency-Key` header that is the same on every attempt.
 * The key holds the provider's payment id, so the header carries it percent-encoded (headerValueOf)
 * and the body carries it as it is.
 * The answer decides as for every HTTP delivery (postDelivery): 2xx and 409 done, 408, 429, 5xx and
 * timeouts retried, anything else failed for good with the response recorded.
 */
export function httpFulfilment(settings: FulfilmentSettings, action: FulfilmentAction): OutboxTransport {
  return {
    timeoutMs: settings.timeoutMs,
    async deliver(message) {
      const effect = readPaymentEffect(message.payload);
      return postDelivery({
        url: settings.url,
        headers: { 'idempotency-key': headerValueOf(message.idempotencyKey) },
        body: JSON.stringify({ action, idempotencyKey: message.idempotencyKey, ...effect }),
        timeoutMs: settings.timeoutMs,
      });
    },
  };
}
