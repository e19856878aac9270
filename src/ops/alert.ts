import type { Logger } from 'pino';
import { summarizeStuck, type StuckReport } from './stuck.js';

const SAMPLE_LINES = 10;
const ALERT_TIMEOUT_MS = 10_000;

/** A Slack-compatible incoming-webhook body: `text` for any client, blocks for Slack's layout. */
export function stuckAlertBody(report: StuckReport, source: string): { text: string; blocks: unknown[] } {
  const summary = `webhook-inbox (${source}): ${summarizeStuck(report)}`;
  const lines = report.events.slice(0, SAMPLE_LINES).map((e) => {
    const error = e.lastError ? ` — ${e.lastError.slice(0, 120)}` : '';
    return `• ${e.kind} ${e.provider} ${e.eventId} (${e.eventType}), attempts ${e.attempts}${error}`;
  });
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
  logger.warn({ counts: report.counts, total: report.total }, body.text);
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(ALERT_TIMEOUT_MS),
  });
  if (!response.ok) throw new Error(`alert webhook answered ${response.status} ${response.statusText}`);
}
