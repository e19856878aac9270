import type { ReconcileSettings } from '../../config/settings.js';
import type { Inbox } from '../../inbox.js';
import { alertBody, postAlert, type AlertBody } from '../alert.js';
import { reconcile, type ReconcileReport } from './reconcile.js';

/** The alert a run that found missing events sends: webhooks are being lost, someone should look. */
export function reconcileAlertBody(report: ReconcileReport, source: string): AlertBody {
  const lines = report.runs.flatMap((run) => run.missing.map((m) => `• ${m.provider} ${m.eventId} (${m.eventType})${m.paymentId ? ` payment ${m.paymentId}` : ''}`));
  return alertBody(reconcileAlertSummary(report, source), lines);
}

function reconcileAlertSummary(report: ReconcileReport, source: string): string {
  const perProvider = report.runs.filter((run) => run.found > 0).map((run) => `${run.provider} ${run.found}`);
  return `webhook-inbox (${source}): reconcile found ${report.found} missing event${report.found === 1 ? '' : 's'} (${perProvider.join(', ')}); webhooks are being lost: check the providers' webhook endpoint settings`;
}

/** Posts the report's alert when it found anything; logs either way. */
export async function alertIfMissing(report: ReconcileReport, alertWebhookUrl: string | null, inbox: Inbox, source: string): Promise<boolean> {
  if (report.found === 0) return false;
  inbox.logger.warn({ found: report.found }, reconcileAlertSummary(report, source));
  if (alertWebhookUrl) await postAlert(alertWebhookUrl, reconcileAlertBody(report, source));
  return alertWebhookUrl !== null;
}

/** A scheduled run: the last RECONCILE_WINDOW, every configured provider, alerting when anything was missing. */
export async function runScheduledReconcile(
  settings: ReconcileSettings,
  alertWebhookUrl: string | null,
  inbox: Inbox,
  window?: { since: Date; until: Date },
): Promise<ReconcileReport> {
  const until = inbox.clock.now();
  const report = await reconcile({ window: window ?? { since: new Date(until.getTime() - settings.windowMs), until } }, { inbox, settings });
  for (const run of report.runs) {
    inbox.logger.info({ provider: run.provider, runKey: run.runKey, status: run.status, found: run.found, recorded: run.recorded, errors: run.errors }, 'reconcile run finished');
  }
  await alertIfMissing(report, alertWebhookUrl, inbox, 'scheduled reconcile');
  return report;
}
