import { BadRequestError } from '../../errors.js';
import type { VerifiedEvent } from '../../model/delivery.js';
import { createdWithin, readItems, requestJson, ProviderApiError, type ApiClientOptions } from '../api-client.js';
import { identifier } from '../payload.js';
import { STRIPE_PAYMENT_EVENT_TYPES } from './normalize.js';

/** Events per page, Stripe's maximum. */
const PAGE_SIZE = 100;

export interface StripeEventPage {
  /** Each event as a delivery of it would be recorded, validated the same way. */
  events: VerifiedEvent[];
  /** Why an item of the page could not be used (it is counted as an error, the others go on). */
  problems: string[];
  /** Where the next page starts (`starting_after`), or null after the last page. */
  next: string | null;
}

/**
 * `GET /v1/events`, newest first, with the types the domain maps (STRIPE_PAYMENT_EVENT_TYPES) and the
 * window on `created`; only events of those types and that window are kept (askedFor). An event read here is the object a webhook carries, so its payload is recorded
 * as a delivery's would be, under its own evt_ id.
 */
export function stripeEventsApi(settings: { apiKey: string; apiBase: string }, options: ApiClientOptions) {
  return {
    async listEvents(query: { createdGte: number; createdLte: number; startingAfter: string | null }): Promise<StripeEventPage> {
      const url = new URL('/v1/events', settings.apiBase);
      url.searchParams.set('created[gte]', String(query.createdGte));
      url.searchParams.set('created[lte]', String(query.createdLte));
      url.searchParams.set('limit', String(PAGE_SIZE));
      for (const type of STRIPE_PAYMENT_EVENT_TYPES) url.searchParams.append('types[]', type);
      if (query.startingAfter) url.searchParams.set('starting_after', query.startingAfter);
      const body = await requestJson('stripe', { method: 'GET', url, headers: { authorization: `Bearer ${settings.apiKey}` } }, options);
      if (body.object !== 'list' || !Array.isArray(body.data) || typeof body.has_more !== 'boolean') {
        throw new ProviderApiError('stripe', 'GET /v1/events did not answer a list (object "list", data, has_more)');
      }
      const { items: events, problems } = readItems(body.data as unknown[], (item) => askedFor(stripeApiEvent(item), query), 'stripe event');
      const last = (body.data as unknown[]).at(-1);
      const lastId = typeof last === 'object' && last !== null && typeof (last as { id?: unknown }).id === 'string' ? (last as { id: string }).id : null;
      if (body.has_more && lastId === null) throw new ProviderApiError('stripe', 'GET /v1/events says it has more but its page ends without an event id to continue after');
      return { events, problems, next: body.has_more ? lastId : null };
    },
  };
}

/**
 * Only what was asked for is recorded: an event of another type, or created outside the window, is
 * a problem of the page (see createdWithin).
 */
function askedFor(event: VerifiedEvent, query: { createdGte: number; createdLte: number }): VerifiedEvent {
  if (!(STRIPE_PAYMENT_EVENT_TYPES as readonly string[]).includes(event.eventType)) {
    throw new BadRequestError(`${event.eventId} is of type "${event.eventType}", which was not asked for: not recorded`);
  }
  createdWithin(event.eventId, event.parsedPayload?.created, { from: query.createdGte, to: query.createdLte });
  return event;
}

/** One event of the API's answer, validated like a delivery's (ids, lengths, printable). */
function stripeApiEvent(item: unknown): VerifiedEvent {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) throw new BadRequestError('an item of data is not an object');
  const event = item as Record<string, unknown>;
  if (typeof event.id !== 'string' || !event.id.trim().startsWith('evt_')) throw new BadRequestError(`event id "${String(event.id).slice(0, 40)}" does not start with evt_`);
  const eventId = identifier(event.id, 'event id (id)');
  if (event.object !== 'event') throw new BadRequestError(`${eventId} is not an event object`);
  return {
    provider: 'stripe',
    eventId,
    eventType: identifier(event.type, 'event type (type)'),
    payload: JSON.stringify(event),
    parsedPayload: event,
    headers: {},
    source: 'reconcile',
  };
}
