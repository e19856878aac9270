import type { FulfilmentSettings } from '../config/settings.js';
import { PermanentError, RetryLaterError } from '../errors.js';
import { readPaymentEffect } from './payment-effect.js';
import type { OutboxTransport } from './transport.js';

export type FulfilmentAction = 'fulfil' | 'cancel';

/** Enough of a response body to tell an operator why the downstream refused. */
const RECORDED_BODY_CHARS = 500;

/**
 * Fulfilment requests: POST JSON with an `Idempotency-Key` header that is the same on every attempt.
 * 2xx is done and 409 means the downstream already did it under this key; 408, 429, 5xx, timeouts
 * and network errors are retried; any other answer (4xx, a redirect) fails for good, with the
 * response recorded.
 */
export function httpFulfilment(settings: FulfilmentSettings, action: FulfilmentAction): OutboxTransport {
  return {
    async deliver(message) {
      const effect = readPaymentEffect(message.payload);
      let response: Response;
      let body: string;
      try {
        response = await fetch(settings.url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': message.idempotencyKey },
          body: JSON.stringify({ action, idempotencyKey: message.idempotencyKey, ...effect }),
          // A redirected POST may turn into a GET elsewhere: configure the final URL instead.
          redirect: 'manual',
          signal: AbortSignal.timeout(settings.timeoutMs),
        });
        body = (await response.text()).slice(0, RECORDED_BODY_CHARS);
      } catch (error) {
        if (error instanceof DOMException && error.name === 'TimeoutError') throw new Error(`no answer within ${settings.timeoutMs} ms`);
        throw error;
      }

      // A success is recorded by its status alone: the body may echo the customer's details.
      if (response.ok) return { status: 'sent', outcome: `HTTP ${response.status}` };
      if (response.status === 409) return { status: 'sent', outcome: 'already done: HTTP 409' };
      const answer = `HTTP ${response.status}${body ? `: ${body}` : ''}`;
      if (response.status === 408 || response.status === 429 || response.status >= 500) {
        throw new RetryLaterError(answer, retryAfterMs(response.headers.get('retry-after')));
      }
      throw new PermanentError(answer);
    },
  };
}

/** Retry-After in seconds (the form rate limiters send); anything else leaves the delay to backoff. */
function retryAfterMs(header: string | null): number | undefined {
  return header !== null && /^\d+$/.test(header.trim()) ? Number(header.trim()) * 1000 : undefined;
}
