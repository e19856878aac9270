import type { Logger } from 'pino';
import type { ProviderAlert } from './provider-alerts.js';
import { summarizeStuck, type StuckReport } from './stuck.js';

const SAMPLE_LINES = 10;
const ALERT_TIMEOUT_MS = 10_000;

/** A Slack-compatible incoming-webhook body: `text` for any client, blocks for Slack's layout. */
export interface AlertBody {
  text: string;
  blocks: unknown[];
}

const SLACK_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };

/**
 * Text as Slack shows it literally. Slack reads `<…>` in a message as a link or a mention
 * (`<!channel>`, `<@U123>`, `<http://evil|click>`) and `&` as the start of an escape, so every text an
 * alert carries, provider data and error texts included, passes here once, as the body is built.
 */
export function slackText(text: string): string {
  return text.replace(/[&<>]/g, (character) => SLACK_ESCAPES[character]!);
}

export function stuckAlertBody(report: StuckReport, source: string): AlertBody {
  const error = (lastError: string | null) => (lastError ? ` — ${lastError.slice(0, 120)}` : '');
  const lines = [
    ...report.events.map((e) => `• ${e.kind} ${e.provider} ${e.eventId} (${e.eventType}), attempts ${e.attempts}${error(e.lastError)}`),
    ...report.outbox.map((row) => `• outbox ${row.state} ${row.kind} ${row.idempotencyKey}, attempts ${row.attempts}${error(row.lastError)}`),
  ];
  return alertBody(stuckAlertSummary(report, source), lines, { total: report.total, more: 'run `webhook-inbox stuck` for the list' });
}

function stuckAlertSummary(report: StuckReport, source: string): string {
  return `webhook-inbox (${source}): ${summarizeStuck(report)}`;
}

/** Posts the alert and logs it; a failed post throws so the caller can report it (exit code, log). */
export async function sendStuckAlert(url: string, report: StuckReport, logger: Logger, source: string): Promise<void> {
  logger.warn({ counts: report.counts, outboxCounts: report.outboxCounts, total: report.total }, stuckAlertSummary(report, source));
  await postAlert(url, stuckAlertBody(report, source));
}

/**
 * An alert of a summary and sample lines, the only way an alert body is made: every text in it is
 * escaped for Slack (slackText). `total`: how many lines there are in all, when `lines` holds only some;
 * `more`: what the line that counts the others adds.
 */
export function alertBody(summary: string, lines: string[], { total = lines.length, more }: { total?: number; more?: string } = {}): AlertBody {
  const shown = lines.slice(0, SAMPLE_LINES);
  if (total > shown.length) shown.push(`… and ${total - shown.length} more${more ? `; ${more}` : ''}`);
  const escaped = slackText(summary);
  return {
    text: escaped,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text: `*${escaped}*` } },
      ...(shown.length > 0 ? [{ type: 'section', text: { type: 'mrkdwn', text: shown.map(slackText).join('\n') } }] : []),
    ],
  };
}

/** Posts an alert body to ALERT_WEBHOOK_URL; a refused or failed post throws. */
export async function postAlert(url: string, body: AlertBody): Promise<void> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(ALERT_TIMEOUT_MS),
  });
  if (!response.ok) throw new Error(`alert webhook answered ${response.status} ${response.statusText}`);
}

/** The alert of provider rules that started firing. */
export function providerAlertBody(alerts: ProviderAlert[], source: string): AlertBody {
  const providers = [...new Set(alerts.map((alert) => alert.provider))].join(', ');
  return alertBody(
    `webhook-inbox (${source}): ${alerts.length} provider alert${alerts.length === 1 ? '' : 's'} (${providers})`,
    alerts.map((alert) => `• ${alert.message}`),
  );
}
