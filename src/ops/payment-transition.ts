import type { Kysely } from 'kysely';
import { DETAILS, planPaymentChange } from '../domain/payment-change.js';
import type { ProviderRegistry } from '../providers/registry.js';
import type { InboxDatabase } from '../db/schema.js';
import type { EventRow } from '../db/event-rows.js';

/**
 * What processing this event now would do to its payment, read without writing: the dry run's answer
 * to "what would this replay change", decided by the rule processing follows (planPaymentChange).
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
  const payment = await db
    .selectFrom('payments')
    .select(['status', 'metadata', ...DETAILS])
    .where('provider', '=', event.provider)
    .where('payment_id', '=', canonical.paymentId)
    .executeTakeFirst();
  const plan = planPaymentChange(payment ?? null, canonical);
  const subject = `payment ${canonical.paymentId}`;
  if (plan.from === null) return `${subject}: new -> ${plan.to}`;
  if (plan.moves) return `${subject}: ${plan.from} -> ${plan.to}`;
  return `${subject}: stays ${plan.to} (event reports ${canonical.state})`;
}
