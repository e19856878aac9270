import type { OperationsSettings } from '../../config/settings.js';
import { fromDbTime, toDbTime } from '../../db/schema.js';
import type { Inbox } from '../../inbox.js';
import { isRecord } from '../../model/json.js';
import { alertBody, postAlert } from '../alert.js';
import { reconcile } from './reconcile.js';
import { ReconcileRuns } from './runs.js';

/** Stripe could not generate events for a while, and now can: the events of that time never came. */
export const STRIPE_EVENT_GENERATION_RESOLVED = 'v2.core.health.event_generation_failure.resolved';
/** Health events received longer ago than this are not looked at again. */
const LOOK_BACK_MS = 7 * 24 * 60 * 60_000;

/**
 * For each Stripe `v2.core.health.event_generation_failure.resolved` event received (it comes to the
 * Stripe endpoint like any event, signed with one of STRIPE_WEBHOOK_SECRET's secrets): an alert, and a
 * reconcile of Stripe over the RECONCILE_WINDOW before the failure was resolved. The run's key is the
 * event's, so each is handled once across every process; without STRIPE_API_KEY the run is recorded
 * failed, and the next reconcile with a key continues it. Returns the events handled now.
 */
export async function handleStripeHealthEvents(settings: OperationsSettings, inbox: Inbox): Promise<number> {
  const db = inbox.database;
  const events = await db
    .selectFrom('webhook_events')
    .innerJoin('webhook_event_bodies', 'webhook_event_bodies.event_row_id', 'webhook_events.id')
    .select(['event_id', 'payload', 'created_at'])
    .where('provider', '=', 'stripe')
    .where('event_type', '=', STRIPE_EVENT_GENERATION_RESOLVED)
    .where('created_at', '>=', toDbTime(new Date(inbox.clock.now().getTime() - LOOK_BACK_MS)))
    .execute();
  const runs = new ReconcileRuns(db, inbox.clock);
  let handled = 0;
  for (const event of events) {
    const runKey = `stripe-health:${event.event_id}`;
    if (await runs.byKey(runKey)) continue;
    const until = resolvedAt(event.payload) ?? fromDbTime(event.created_at);
    const window = { since: new Date(until.getTime() - settings.reconcile.windowMs), until };
    const summary = `webhook-inbox: Stripe reports it could not generate events for a while (${event.event_id}); reconciling Stripe from ${window.since.toISOString()} to ${window.until.toISOString()}`;
    inbox.logger.warn({ eventId: event.event_id }, summary);
    if (settings.alertWebhookUrl) await postAlert(settings.alertWebhookUrl, alertBody(summary, []));
    if (settings.reconcile.apis.stripe) {
      await reconcile({ window, provider: 'stripe', runKey }, { inbox, settings: settings.reconcile });
    } else {
      await runs.start('stripe', window, runKey);
      await runs.finish(runKey, 'failed', 'STRIPE_API_KEY is not set: set it, and the next reconcile continues this window');
    }
    handled++;
  }
  return handled;
}

/** `data.resolved_at` when the event carries its data (a thin event does not). */
function resolvedAt(payload: string): Date | null {
  try {
    const event: unknown = JSON.parse(payload);
    const data = isRecord(event) ? event.data : undefined;
    const value = isRecord(data) ? data.resolved_at : undefined;
    const date = typeof value === 'string' ? new Date(value) : null;
    return date && !Number.isNaN(date.getTime()) ? date : null;
  } catch {
    return null;
  }
}
