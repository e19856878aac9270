import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import { formatDuration } from '../config/duration.js';
import type { ProviderAlertSettings } from '../config/settings.js';
import { toDbTime, type InboxDatabase } from '../db/schema.js';
import { PROVIDER_NAMES, type ProviderName } from '../model/delivery.js';
import { minuteOf } from '../observability/delivery-stats.js';
import type { DeliveryResult } from '../observability/metrics.js';

/** The share of signature failures is judged over this last stretch of time. */
const SIGNATURE_WINDOW_MS = 60 * 60_000;
/** The answers a provider takes as delivered. */
const SUCCESS: DeliveryResult[] = ['accepted', 'duplicate'];

export type ProviderAlertRule = 'non_2xx' | 'signature_failures' | 'silent';

export interface ProviderAlert {
  provider: ProviderName;
  rule: ProviderAlertRule;
  message: string;
}

/**
 * The rules that match how providers fail, read from `delivery_stats` (every process's answers,
 * per minute): a provider answered only non-2xx for longer than ALERT_NON_2XX_FOR (Razorpay disables a
 * webhook after 24 hours of it), a share of signature failures above ALERT_SIGNATURE_FAILURE_SHARE
 * (a secret rotated on one side only), no delivery at all for ALERT_PROVIDER_SILENT_FOR.
 */
export async function findProviderAlerts(
  db: Kysely<InboxDatabase>,
  clock: Clock,
  settings: ProviderAlertSettings,
  providers: readonly ProviderName[] = PROVIDER_NAMES,
): Promise<ProviderAlert[]> {
  const now = clock.now();
  const alerts: ProviderAlert[] = [];
  for (const provider of providers) {
    const lastOk = await lastMinute(db, provider, (result) => SUCCESS.includes(result));
    const firstBadSince = await db
      .selectFrom('delivery_stats')
      .select((eb) => eb.fn.min('minute').as('minute'))
      .where('provider', '=', provider)
      .where('result', 'not in', SUCCESS)
      .$if(lastOk !== null, (q) => q.where('minute', '>', lastOk!))
      .executeTakeFirst();
    const failingSince = firstBadSince?.minute ?? null;
    if (failingSince !== null && failingSince <= toDbTime(new Date(now.getTime() - settings.non2xxForMs))) {
      alerts.push({
        provider,
        rule: 'non_2xx',
        message: `${provider} has been answered only non-2xx (401, 4xx, 503) since ${failingSince} UTC, over ${formatDuration(settings.non2xxForMs)}: fix it before the provider disables the webhook (Razorpay does after 24 hours)`,
      });
    }

    const recent = await db
      .selectFrom('delivery_stats')
      .select(['result', (eb) => eb.fn.sum<number | string>('deliveries').as('count')])
      .where('provider', '=', provider)
      .where('minute', '>=', minuteOf(new Date(now.getTime() - SIGNATURE_WINDOW_MS)))
      .groupBy('result')
      .execute();
    const total = recent.reduce((sum, row) => sum + Number(row.count), 0);
    const failures = Number(recent.find((row) => row.result === 'invalid_signature')?.count ?? 0);
    if (failures >= settings.signatureFailureMinCount && failures / total > settings.signatureFailureShare) {
      alerts.push({
        provider,
        rule: 'signature_failures',
        message: `${failures} of ${total} ${provider} deliveries in the last hour failed their signature check: a secret was rotated at the provider and not here, or the reverse`,
      });
    }

    if (settings.providerSilentForMs !== null) {
      const last = await lastMinute(db, provider, () => true);
      if (last === null || last < toDbTime(new Date(now.getTime() - settings.providerSilentForMs))) {
        alerts.push({
          provider,
          rule: 'silent',
          message: `no delivery from ${provider} for over ${formatDuration(settings.providerSilentForMs)}${last === null ? '' : ` (the last in the minute of ${last} UTC)`}: check its webhook settings, or run webhook-inbox reconcile`,
        });
      }
    }
  }
  return alerts;
}

async function lastMinute(db: Kysely<InboxDatabase>, provider: string, which: (result: DeliveryResult) => boolean): Promise<string | null> {
  const rows = await db
    .selectFrom('delivery_stats')
    .select(['result', (eb) => eb.fn.max('minute').as('minute')])
    .where('provider', '=', provider)
    .groupBy('result')
    .execute();
  const minutes = rows.filter((row) => which(row.result as DeliveryResult) && row.minute !== null).map((row) => row.minute);
  return minutes.length === 0 ? null : minutes.reduce((a, b) => (a > b ? a : b));
}

const alertKey = (alert: ProviderAlert) => `${alert.provider}:${alert.rule}`;

/**
 * The scheduled check: posts the alerts that started firing since the last check (each once while it
 * fires, again after it stopped and started again), logs each either way. What fires is kept in
 * `firing_alerts`, so processes that take turns at the check post an alert once between them.
 */
export function providerAlertCheck(db: Kysely<InboxDatabase>, clock: Clock, settings: ProviderAlertSettings, providers: readonly ProviderName[]) {
  return async (post: ((alerts: ProviderAlert[]) => Promise<void>) | null, warn: (alert: ProviderAlert) => void): Promise<ProviderAlert[]> => {
    const alerts = await findProviderAlerts(db, clock, settings, providers);
    const keys = alerts.map(alertKey);
    await db
      .deleteFrom('firing_alerts')
      .$if(keys.length > 0, (q) => q.where('alert_key', 'not in', keys))
      .execute();
    const fresh: ProviderAlert[] = [];
    const since = toDbTime(clock.now());
    for (const [index, alert] of alerts.entries()) {
      const inserted = await db.insertInto('firing_alerts').orIgnore().values({ alert_key: keys[index]!, since }).executeTakeFirst();
      if (Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0) fresh.push(alert);
    }
    for (const alert of alerts) warn(alert);
    if (fresh.length > 0 && post) {
      // Not posted, not told: the next check posts them again.
      await post(fresh).catch(async (error: unknown) => {
        await db.deleteFrom('firing_alerts').where('alert_key', 'in', fresh.map(alertKey)).execute();
        throw error;
      });
    }
    return fresh;
  };
}
