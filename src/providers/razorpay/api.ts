import { BadRequestError } from '../../errors.js';
import type { VerifiedEvent } from '../../model/delivery.js';
import type { PaymentState } from '../../model/payment-event.js';
import { createdWithin, readItems, requestJson, ProviderApiError, type ApiClientOptions } from '../api-client.js';
import { identifier } from '../payload.js';

/** Items per page, Razorpay's maximum `count`. */
export const RAZORPAY_PAGE_SIZE = 100;

/** A payment's `status` as the API reports it, and the state it means here. */
const STATES: Record<string, PaymentState> = { created: 'created', authorized: 'authorized', captured: 'captured', refunded: 'refunded', failed: 'failed' };

/** The event type a webhook of each state has; `created` has none (no webhook reports it). */
const EVENT_TYPES: Partial<Record<PaymentState, string>> = {
  authorized: 'payment.authorized',
  captured: 'payment.captured',
  failed: 'payment.failed',
  refunded: 'refund.processed',
};

export interface RazorpayPayment {
  id: string;
  state: PaymentState;
  /** The payment entity whole, as a webhook carries it. */
  entity: Record<string, unknown>;
}

export interface RazorpayPage<T> {
  items: T[];
  problems: string[];
  /** Whether the page was full, so another may follow (`skip` on by its size). */
  full: boolean;
}

interface Settings {
  keyId: string;
  keySecret: string;
  apiBase: string;
}

/** `GET /v1/payments` and `GET /v1/refunds` (from/to on created_at, count/skip), basic auth with the key id and secret. */
export function razorpayPaymentsApi(settings: Settings, options: ApiClientOptions) {
  const headers = { authorization: `Basic ${Buffer.from(`${settings.keyId}:${settings.keySecret}`).toString('base64')}` };
  const get = (path: string, query: Record<string, number> = {}) => {
    const url = new URL(path, settings.apiBase);
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, String(value));
    return requestJson('razorpay', { method: 'GET', url, headers }, options);
  };
  const collection = async <T>(path: string, query: { from: number; to: number; skip: number }, read: (item: unknown) => T): Promise<RazorpayPage<T>> => {
    const body = await get(path, { ...query, count: RAZORPAY_PAGE_SIZE });
    if (body.entity !== 'collection' || !Array.isArray(body.items)) throw new ProviderApiError('razorpay', `GET ${path} did not answer a collection (entity "collection", items)`);
    return { ...readItems(body.items as unknown[], read, `razorpay ${path}`), full: body.items.length >= RAZORPAY_PAGE_SIZE };
  };
  return {
    // Only what was asked for is recorded: an item created outside the window is a problem of the page.
    listPayments: (query: { from: number; to: number; skip: number }) =>
      collection('/v1/payments', query, (item) => {
        const payment = razorpayPayment(item);
        createdWithin(payment.id, payment.entity.created_at, query);
        return payment;
      }),
    listRefunds: (query: { from: number; to: number; skip: number }) => collection('/v1/refunds', query, (item) => refundPaymentId(item, query)),
    async fetchPayment(id: string): Promise<RazorpayPayment> {
      try {
        const payment = razorpayPayment(await get(`/v1/payments/${encodeURIComponent(id)}`));
        if (payment.id !== id) throw new BadRequestError(`asked for payment ${id}, answered payment ${payment.id}: not recorded`);
        return payment;
      } catch (error) {
        if (error instanceof BadRequestError) throw new ProviderApiError('razorpay', `GET /v1/payments/${id}: ${error.message}`);
        throw error;
      }
    },
  };
}

function entityOf(item: unknown, kind: string): Record<string, unknown> {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new BadRequestError(`an item is not a ${kind} object`);
  return item as Record<string, unknown>;
}

/** A payment entity, validated like a delivery's ids and states. */
function razorpayPayment(item: unknown): RazorpayPayment {
  const entity = entityOf(item, 'payment');
  const id = identifier(entity.id, 'payment id (id)');
  if (!id.startsWith('pay_')) throw new BadRequestError(`payment id "${id.slice(0, 40)}" does not start with pay_`);
  const state = typeof entity.status === 'string' ? STATES[entity.status] : undefined;
  if (state === undefined) throw new BadRequestError(`payment ${id} has an unknown status`);
  if (typeof entity.amount !== 'number' || !Number.isSafeInteger(entity.amount)) throw new BadRequestError(`payment ${id} has no whole amount`);
  return { id, state, entity };
}

/** The payment a refund created in the window is of; refunds not processed yet change nothing. */
function refundPaymentId(item: unknown, window: { from: number; to: number }): string | null {
  const refund = entityOf(item, 'refund');
  createdWithin(identifier(refund.id, 'refund id (id)'), refund.created_at, window);
  return refund.status === 'processed' ? identifier(refund.payment_id, 'payment id of a refund (payment_id)') : null;
}

/**
 * The event recorded for a payment whose state here is missing or behind the API's. The API gives
 * payments, not events, so its key is one no webhook has (`reconcile:<payment>:<state>`), and its
 * payload has a webhook's shape, so the normaliser reads it like any delivery.
 */
export function razorpayReconcileEvent(payment: RazorpayPayment): VerifiedEvent | null {
  const eventType = EVENT_TYPES[payment.state];
  if (eventType === undefined) return null;
  const payload = { entity: 'event', event: eventType, contains: ['payment'], payload: { payment: { entity: payment.entity } }, reconciled: true };
  return {
    provider: 'razorpay',
    eventId: identifier(`reconcile:${payment.id}:${payment.state}`, 'event id'),
    eventType,
    payload: JSON.stringify(payload),
    parsedPayload: payload,
    headers: {},
    source: 'reconcile',
  };
}
