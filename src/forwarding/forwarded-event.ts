import { createHash } from 'node:crypto';
import { fromDbTime, type DbTime } from '../db/schema.js';
import type { EventContext, PaymentContext } from '../domain/applier.js';
import type { Payment } from '../domain/payments.js';
import { metadataString, type CanonicalEvent, type PaymentMetadata, type PaymentState } from '../model/payment-event.js';

/**
 * The canonical events the inbox forwards, one JSON document per delivery. Their JSON Schema is
 * docs/forwarded-event.schema.json: a change here is a change there, and the tests hold every
 * forwarded event against it. Field names are snake_case, as most webhook payloads are, for
 * receivers in any language.
 */
export type ForwardedEvent = PaymentForwardedEvent | WebhookForwardedEvent;

export interface PaymentForwardedEvent {
  /** The same as the `webhook-id` header: stable across retries, the receiver's deduplication key. */
  id: string;
  /** `payment.<state>` for a transition; `payment.updated` when an event completed details of a payment in the same state. */
  type: `payment.${PaymentState}` | 'payment.updated';
  /** When the inbox processed the event behind it (ISO 8601, UTC). */
  timestamp: string;
  data: {
    provider: string;
    payment_id: string;
    status: PaymentState;
    /** The state before; null when this event created the payment. */
    previous_status: PaymentState | null;
    /** In the currency's smallest unit (cents, paise). */
    amount: number | null;
    /** ISO 4217, upper case. */
    currency: string | null;
    /** `user_id`: the merchant's id of the customer, from the metadata (customerUserId). */
    customer: { email: string | null; user_id: string | null };
    /** The merchant's own data on the payment, whole. */
    metadata: PaymentMetadata;
    /** The provider event ids behind this change. */
    source_event_ids: string[];
  };
}

export interface WebhookForwardedEvent {
  id: string;
  /** A verified provider event, whatever it means (FORWARD_RAW_EVENTS=true). */
  type: 'webhook.received';
  timestamp: string;
  data: {
    provider: string;
    event_id: string;
    event_type: string;
    /** The payment it is about, when it is about one. */
    payment_id: string | null;
    /** When the inbox recorded it (ISO 8601, UTC). */
    received_at: string;
    /** The provider's payload as verified (PayU's form fields as a JSON object). */
    payload: unknown;
  };
}

/** A forwarded event with the outbox key it is written under. */
export interface ForwardedMessage {
  key: string;
  /** Events of one payment are delivered one at a time, in order. */
  orderingKey: string | null;
  event: ForwardedEvent;
}

/** The key derives from what the event is about, so a second run of the same event writes nothing new. */
function messageId(key: string): string {
  return `msg_${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}

/** What the outbox key of every event forwarded about a provider's payments or events starts with. */
export function forwardKeyPrefix(provider: string): string {
  return `forward:${provider}:`;
}

/** The ordering of a payment's forwarded events: one at a time, in the order written. */
export function paymentOrderingKey(provider: string, paymentId: string): string {
  return `payment:${provider}:${paymentId}`;
}

const isoTime = (time: DbTime) => fromDbTime(time).toISOString();

/**
 * The metadata key each provider's payments carry the merchant's id of the customer under, by the
 * convention the forwarded event's schema documents: Stripe metadata.user_id, Razorpay
 * notes.user_id, PayU udf1. Receivers rely on it: it changes with the schema, not with any domain's
 * settings.
 */
const USER_ID_KEYS: Readonly<Record<string, string>> = { stripe: 'user_id', razorpay: 'user_id', payu: 'udf1' };

/** The customer's user id in the payment's metadata, trimmed; null when it carries none. */
export function customerUserId(payment: Pick<Payment, 'provider' | 'metadata'>): string | null {
  const key = Object.hasOwn(USER_ID_KEYS, payment.provider) ? USER_ID_KEYS[payment.provider]! : null;
  return key === null ? null : metadataString(payment.metadata[key]);
}

export function paymentMessage({ payment, previousStatus, event, now }: PaymentContext): ForwardedMessage {
  const transition = previousStatus !== payment.status;
  const prefix = `${forwardKeyPrefix(payment.provider)}${payment.payment_id}`;
  const key = transition ? `${prefix}:${payment.status}` : `${prefix}:updated:${event.eventId}`;
  return {
    key,
    orderingKey: paymentOrderingKey(payment.provider, payment.payment_id),
    event: {
      id: messageId(key),
      type: transition ? `payment.${payment.status}` : 'payment.updated',
      timestamp: isoTime(now),
      data: {
        provider: payment.provider,
        payment_id: payment.payment_id,
        status: payment.status,
        previous_status: previousStatus,
        amount: payment.amount === null ? null : Number(payment.amount),
        currency: payment.currency,
        customer: { email: payment.email, user_id: customerUserId(payment) },
        metadata: payment.metadata,
        source_event_ids: [event.eventId],
      },
    },
  };
}

export function webhookMessage({ event, canonical, now }: EventContext & { canonical: CanonicalEvent }): ForwardedMessage {
  const key = `${forwardKeyPrefix(event.provider)}event:${event.eventId}`;
  const paymentId = canonical.kind === 'payment' ? canonical.paymentId : null;
  return {
    key,
    orderingKey: paymentId === null ? null : paymentOrderingKey(event.provider, paymentId),
    event: {
      id: messageId(key),
      type: 'webhook.received',
      timestamp: isoTime(now),
      data: {
        provider: event.provider,
        event_id: event.eventId,
        event_type: event.eventType,
        payment_id: paymentId,
        received_at: event.createdAt.toISOString(),
        payload: event.payload,
      },
    },
  };
}
