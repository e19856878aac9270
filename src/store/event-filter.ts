import { sql, type Expression, type ExpressionBuilder, type SqlBool } from 'kysely';
import { toDbTime, type EventStatus, type InboxDatabase } from '../db/schema.js';
import { PROVIDER_NAMES } from '../model/delivery.js';

/**
 * Which events an operator means, as every listing and selection takes it: the CLI's `events list`
 * and `replay`, the admin list, API and bulk replay. Turned into SQL here only, so that a filter
 * selects the same events whichever door it came through.
 */
export interface EventFilter {
  provider?: string;
  status?: EventStatus;
  /** The provider's event type (payment_intent.succeeded, ...). */
  type?: string;
  /** The provider's payment id the events are about. */
  paymentId?: string;
  /** The provider's event id ("evt_...", "pay_...:success"). */
  eventId?: string;
  /** Received at or after. */
  from?: Date;
  /** Received before. */
  to?: Date;
  /** Text the payload contains; a caller bounds the window (from, to), as every payload in it is read. */
  q?: string;
  /** The payer's e-mail, exactly: the events of the payments recorded with it (an access request's answer). */
  email?: string;
}

/**
 * The providers a lookup by provider event id names: `provider`, or every provider when none is
 * given, so that the unique (provider, event_id) index serves the lookup either way.
 */
export function providersToSearch(provider: string | undefined): readonly string[] {
  return provider ? [provider] : PROVIDER_NAMES;
}

/** Escapes LIKE's wildcards, with ! as the escape character (the same in every SQL database). */
const likePattern = (value: string) => `%${value.replace(/[!%_]/g, (c) => `!${c}`)}%`;

/**
 * The condition the events `filter` selects meet, for a query on webhook_events (alone or joined
 * with its bodies): `query.where(eventsMatching(filter))`.
 */
export function eventsMatching(filter: EventFilter) {
  return (eb: ExpressionBuilder<InboxDatabase, 'webhook_events'>): Expression<SqlBool> => {
    const conditions: Array<Expression<SqlBool>> = [];
    if (filter.provider) conditions.push(eb('webhook_events.provider', '=', filter.provider));
    if (filter.status) conditions.push(eb('webhook_events.status', '=', filter.status));
    if (filter.type) conditions.push(eb('webhook_events.event_type', '=', filter.type));
    if (filter.paymentId) conditions.push(eb('webhook_events.payment_id', '=', filter.paymentId));
    if (filter.eventId) conditions.push(eb('webhook_events.provider', 'in', providersToSearch(filter.provider)), eb('webhook_events.event_id', '=', filter.eventId));
    if (filter.from) conditions.push(eb('webhook_events.created_at', '>=', toDbTime(filter.from)));
    if (filter.to) conditions.push(eb('webhook_events.created_at', '<', toDbTime(filter.to)));
    if (filter.email) {
      const email = filter.email;
      conditions.push(
        eb.exists(
          eb
            .selectFrom('payments')
            .select('payments.id')
            .whereRef('payments.provider', '=', 'webhook_events.provider')
            .whereRef('payments.payment_id', '=', 'webhook_events.payment_id')
            .where('payments.email', '=', email),
        ),
      );
    }
    if (filter.q) {
      const pattern = likePattern(filter.q);
      conditions.push(
        eb.exists(
          eb
            .selectFrom('webhook_event_bodies')
            .select('webhook_event_bodies.event_row_id')
            .whereRef('webhook_event_bodies.event_row_id', '=', 'webhook_events.id')
            .where(sql<boolean>`payload like ${pattern} escape '!'`),
        ),
      );
    }
    return eb.and(conditions);
  };
}
