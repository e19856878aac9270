import type { Command } from 'commander';
import { sendStuckAlert } from '../../ops/alert.js';
import { formatDuration } from '../../config/duration.js';
import { OperationError } from '../../ops/errors.js';
import { findStuck, STUCK_KIND_LABELS, summarizeStuck } from '../../ops/stuck.js';
import { configOrExit, durationOption, EXIT_FAILED, withInbox } from '../context.js';
import { printJson, printTable } from '../output.js';

export function registerStuckCommand(program: Command): void {
  program
    .command('stuck')
    .description('list events and outbox rows (receipts, fulfilment requests) that need an operator; exit code 1 when there are any (cron-friendly)')
    .option('--older-than <duration>', 'received events count as stuck after this long (default STUCK_CHECK_OLDER_THAN, 30m)', durationOption)
    .option(
      '--outbox-older-than <duration>',
      'pending outbox rows count as stuck after this long (default STUCK_CHECK_OUTBOX_OLDER_THAN, 1h); failed ones always do',
      durationOption,
    )
    .option('--alert', 'also post a summary to ALERT_WEBHOOK_URL (Slack-compatible) when anything is found')
    .option('--json', 'print JSON')
    .action(async (options: { olderThan?: number; outboxOlderThan?: number; alert?: boolean; json?: boolean }) => {
      const config = configOrExit().config;
      const alertUrl = config.operations.alertWebhookUrl;
      if (options.alert && !alertUrl) throw new OperationError('--alert needs ALERT_WEBHOOK_URL (a Slack incoming webhook or any URL taking its JSON)', 'bad_argument');
      const defaults = config.operations.stuckCheck;
      const thresholds = { olderThanMs: options.olderThan ?? defaults.olderThanMs, outboxOlderThanMs: options.outboxOlderThan ?? defaults.outboxOlderThanMs };
      const report = await withInbox(config, options.alert ? 'writes' : 'reads', async (inbox) => {
        const found = await findStuck(inbox.database, inbox.clock, thresholds);
        if (options.alert && found.total > 0) await sendStuckAlert(alertUrl!, found, inbox.logger, 'stuck command');
        return found;
      });

      if (options.json) printJson(report);
      else {
        console.log(
          `${summarizeStuck(report)} (received events count after ${formatDuration(thresholds.olderThanMs)}, pending outbox rows after ${formatDuration(thresholds.outboxOlderThanMs)})`,
        );
        if (report.events.length > 0) {
          printTable(report.events, [
            ['kind', (e) => STUCK_KIND_LABELS[e.kind]],
            ['id', (e) => e.id],
            ['provider', (e) => e.provider],
            ['event id', (e) => e.eventId],
            ['type', (e) => e.eventType],
            ['attempts', (e) => e.attempts],
            ['received (UTC)', (e) => e.createdAt],
            ['lease expiry / next retry', (e) => e.dueAt ?? (e.kind === 'failed' ? 'none left' : null)],
            ['last error', (e) => e.lastError, 'whole'],
          ]);
        }
        if (report.outbox.length > 0) {
          if (report.events.length > 0) console.log('');
          printTable(report.outbox, [
            ['outbox', (row) => (row.state === 'failed' ? 'failed' : `${row.status} too long`)],
            ['id', (row) => row.id],
            ['kind', (row) => row.kind],
            ['key', (row) => row.idempotencyKey],
            ['attempts', (row) => row.attempts],
            ['written (UTC)', (row) => row.createdAt],
            ['next attempt', (row) => row.nextAttemptAt ?? (row.state === 'failed' ? 'none left: outbox retry' : null)],
            ['last error', (row) => row.lastError, 'whole'],
          ]);
        }
        if (options.alert && report.total > 0) console.log('alert sent');
      }
      if (report.total > 0) process.exitCode = EXIT_FAILED;
    });
}
