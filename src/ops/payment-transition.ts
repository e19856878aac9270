import type { Kysely } from 'kysely';
import { statesBefore } from '../model/payment-event.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { InboxDatabase } from '../db/schema.js';
import type { EventRow } from '../db/event-rows.js';

/**
 * What processing this event now would do to its payment, read without writing: the dry run's answer
 * to "what would this replay change".
 */
export async function describeTransition(db: Kysely<InboxDatabase>, providers: ProviderRegistry, event: EventRow): Promise<string> {
  let payload: unknown;
  try {
    payload = JSON.parse(event.payload);
  } catch {
    return 'none: stored payload is not JSON';
  }
  const canonical = providers.toCanonical(event.provider, { eventType: event.event_type, payload });
  if (canonical.kind === 'ignored') return `none: ${canonical.reason}`;
  const payment = await db.selectFrom('payments').select('status').where('provider', '=', event.provider).where('payment_id', '=', canonical.paymentId).executeTakeFirst();
  if (!payment) return `payment ${canonical.paymentId}: new -> ${canonical.state}`;
  if (statesBefore(canonical.state).includes(payment.status)) return `payment ${canonical.paymentId}: ${payment.status} -> ${canonical.state}`;
  return `payment ${canonical.paymentId}: stays ${payment.status} (event reports ${canonical.state})`;
}
