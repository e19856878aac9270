import type { ForwardSettings } from '../config/settings.js';
import { PermanentError } from '../errors.js';
import type { EventHandler, PaymentHandler, PaymentHandlers } from '../domain/applier.js';
import { definePaymentDomain, type PaymentDomain } from '../extension/payment-domain.js';
import { PAYMENT_STATE_ORDER } from '../model/payment-event.js';
import { isRecord } from '../model/json.js';
import { postDelivery } from '../outbox/http-post.js';
import { writeOutbox } from '../outbox/outbox-writer.js';
import type { OutboxTransport } from '../outbox/transport.js';
import { forwardKeyPrefix, paymentMessage, paymentOrderingKey, webhookMessage, type ForwardedMessage } from './forwarded-event.js';
import { standardWebhookHeaders } from './standard-webhooks.js';

/** The outbox kind of a forwarded event. */
export const FORWARD_KIND = 'forward';

function write(context: Parameters<PaymentHandler>[0] | Parameters<EventHandler>[0], { key, orderingKey, event }: ForwardedMessage): void {
  writeOutbox(context, { kind: FORWARD_KIND, key, payload: event, orderingKey: orderingKey ?? undefined });
}

const forwardPayment: PaymentHandler = async (context) => write(context, paymentMessage(context));
const forwardWebhook: EventHandler = async (context) => write(context, webhookMessage(context));

/**
 * Delivers a forwarded event: the stored JSON as the body, signed afresh at each attempt (the
 * timestamp is the attempt's), under the same `webhook-id` every time. The timestamp is the
 * machine's time, not an injected clock: the receiver checks it against its own.
 */
export function forwardTransport(settings: ForwardSettings): OutboxTransport {
  return {
    timeoutMs: settings.timeoutMs,
    async deliver(message) {
      const id = isRecord(message.payload) ? message.payload.id : undefined;
      if (typeof id !== 'string') throw new PermanentError('the forwarded event has no id');
      const body = JSON.stringify(message.payload);
      return postDelivery({
        url: settings.url,
        headers: { ...standardWebhookHeaders(id, new Date(), body, settings.secrets), 'user-agent': 'webhook-inbox' },
        body,
        timeoutMs: settings.timeoutMs,
      });
    },
  };
}

/**
 * Forwarding as a domain: every payment transition (and detail completed) becomes one canonical
 * event in the outbox, ordered per payment; with `rawEvents`, every verified event too, before what
 * it changed. The outbox delivers them with its lease, retries, backoff and failed rows.
 */
export function forwarding(settings: ForwardSettings): PaymentDomain {
  const handlers: PaymentHandlers = Object.fromEntries(PAYMENT_STATE_ORDER.map((state) => [state, [forwardPayment]]));
  return definePaymentDomain({
    name: 'forwarding',
    handlers,
    eventHandlers: settings.rawEvents ? [forwardWebhook] : [],
    transports: { [FORWARD_KIND]: forwardTransport(settings) },
    outboxKinds: { [FORWARD_KIND]: 'forwarded event' },
    paymentOutbox: ({ provider, paymentId }) => ({ orderingKeys: [paymentOrderingKey(provider, paymentId)] }),
    providerOutboxPrefixes: (provider) => [forwardKeyPrefix(provider)],
  });
}
