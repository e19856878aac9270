import type { Logger } from 'pino';
import type { ProviderAlert } from './provider-alerts.js';
import { summarizeStuck, type StuckReport } from './stuck.js';

const SAMPLE_LINES = 10;
const ALERT_TIMEOUT_MS = 10_000;

/** A Slack-compatible incoming-webhook body: `text` for any client, blocks for Slack's layout. */
export function stuckAlertBody(report: StuckReport, source: string): { text: string; blocks: unknown[] } {
  const summary = `webhook-inbox (${source}): ${summarizeStuck(report)}`;
  const error = (lastError: string | null) => (lastError ? ` — ${lastError.slice(0, 120)}` : '');
  const lines = [
    ...report.events.map((e) => `• ${e.kind} ${e.provider} ${e.eventId} (${e.eventType}), attempts ${e.attempts}${error(e.lastError)}`),
    ...report.outbox.map((row) => `• outbox ${row.state} ${row.kind} ${row.idempotencyKey}, attempts ${row.attempts}${error(row.lastError)}`),
  ].slice(0, SAMPLE_LINES);
  if (report.total > lines.length) lines.push(`… and ${report.total - lines.length} more; run \`webhook-inbox stuck\` for the list`);
  return {
    text: summary,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: `*${summary}*` } },
      { type: 'section', text: { type: 'mrkdwn', text: lines.join('\n') } },
    ],
  };
}

/** Posts the alert and logs it; a failed post throws so the caller can report it (exit code, log). */
export async function sendStuckAlert(url: string, report: StuckReport, logger: Logger, source: string): Promise<void> {
  const body = stuckAlertBody(report, source);
  logger.warn({ counts: report.counts, outboxCounts: report.outboxCounts, total: report.total }, body.text);
  await postAlert(url, body);
}

/** An alert of a summary and sample lines, in the same Slack-compatible shape as the stuck check's. */
export function alertBody(summary: string, lines: string[]): { text: string; blocks: unknown[] } {
  const shown = lines.slice(0, SAMPLE_LINES);
  if (lines.length > shown.length) shown.push(`… and ${lines.length - shown.length} more`);
  return {
    text: summary,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: `*${summary}*` } },
      ...(shown.length > 0 ? [{ type: 'section', text: { type: 'mrkdwn', text: shown.join('\n') } }] : []),
    ],
  };
}

/** Posts an alert body to ALERT_WEBHOOK_URL; a refused or failed post throws. */
export async function postAlert(url: string, body: { text: string; blocks: unknown[] }): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(ALERT_TIMEOUT_MS),
  });
  if (!response.ok) throw new Error(`alert webhook answered ${response.status} ${response.statusText}`);
}

/** The alert of provider rules that started firing. */
export function providerAlertBody(alerts: ProviderAlert[], source: string): { text: string; blocks: unknown[] } {
  const providers = [...new Set(alerts.map((alert) => alert.provider))].join(', ');
  return alertBody(
    `webhook-inbox (${source}): ${alerts.length} provider alert${alerts.length === 1 ? '' : 's'} (${providers})`,
    alerts.map((alert) => `• ${alert.message}`),
  );
}
