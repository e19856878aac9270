import type { Command } from 'commander';
import { PROVIDER_NAMES, type ProviderName } from '../../model/delivery.js';
import { alertIfMissing } from '../../ops/reconcile/alerting.js';
import { reconcile } from '../../ops/reconcile/reconcile.js';
import { ReconcileRuns } from '../../ops/reconcile/runs.js';
import { choiceOption, configOrExit, EXIT_FAILED, timeOption, withInbox } from '../context.js';
import { printJson, printTable } from '../output.js';

interface ReconcileOptions {
  provider?: ProviderName;
  since?: Date;
  until?: Date;
  dryRun?: boolean;
  json?: boolean;
  history?: boolean;
  payuTxnid: string[];
}

const HISTORY_ROWS = 50;

export function registerReconcileCommand(program: Command): void {
  program
    .command('reconcile')
    .description(
      "ask the providers' APIs what happened in a window and record the events that never arrived, as deliveries would be; exit code 1 when any were missing (webhooks are being lost)",
    )
    .option('--provider <name>', `only this provider (${PROVIDER_NAMES.join(', ')})`, choiceOption(PROVIDER_NAMES))
    .option('--since <time>', 'start of the window: a duration ago (24h) or a date (default RECONCILE_WINDOW ago)', timeOption)
    .option('--until <time>', 'end of the window (default now)', timeOption)
    .option('--dry-run', 'list what is missing; record nothing, change nothing')
    .option('--payu-txnid <id>', 'also ask PayU about this transaction (repeatable)', (value: string, previous: string[]) => [...previous, value], [])
    .option('--history', 'list the latest runs (window, found, recorded, errors) instead of running')
    .option('--json', 'print JSON')
    .action(async (options: ReconcileOptions) => {
      const { config } = configOrExit();
      const settings = config.operations.reconcile;
      if (options.history) {
        const runs = await withInbox(config, 'reads', (inbox) => new ReconcileRuns(inbox.database, inbox.clock).history(HISTORY_ROWS, options.provider));
        if (options.json) printJson({ runs });
        else if (runs.length === 0) console.log('no reconcile runs yet');
        else
          printTable(runs, [
            ['started (UTC)', (r) => r.startedAt],
            ['provider', (r) => r.provider],
            ['window from', (r) => r.windowStart],
            ['window to', (r) => r.windowEnd],
            ['status', (r) => r.status],
            ['found', (r) => r.found],
            ['recorded', (r) => r.recorded],
            ['errors', (r) => r.errors],
            ['last error', (r) => r.lastError, 'whole'],
          ]);
        return;
      }
      const until = options.until ?? new Date();
      const since = options.since ?? new Date(until.getTime() - settings.windowMs);
      const { report, alerted } = await withInbox(config, 'writes', async (inbox) => {
        const found = await reconcile({ window: { since, until }, provider: options.provider, dryRun: options.dryRun, payuTxnids: options.payuTxnid }, { inbox, settings });
        return { report: found, alerted: found.dryRun ? false : await alertIfMissing(found, config.operations.alertWebhookUrl, inbox, 'reconcile command') };
      });
      if (options.json) printJson(report);
      else {
        for (const { provider, reason } of report.disabled) console.log(`${provider}: not reconciled: ${reason}`);
        for (const run of report.runs) {
          const window = `${run.window.since.toISOString()} .. ${run.window.until.toISOString()}`;
          const counts = report.dryRun ? `${run.found} missing` : `${run.found} missing, ${run.recorded} recorded`;
          console.log(`${run.provider}${run.resumed ? ' (resumed run)' : ''}: ${window}: ${counts}, ${run.errors} errors${run.lastError ? ` (last: ${run.lastError})` : ''}`);
        }
        const missing = report.runs.flatMap((run) => run.missing);
        if (missing.length > 0) {
          printTable(missing, [
            ['provider', (m) => m.provider],
            ['event id', (m) => m.eventId],
            ['type', (m) => m.eventType],
            ['payment', (m) => m.paymentId],
            ['state', (m) => m.state],
          ]);
        }
        if (alerted) console.log('alert sent');
      }
      if (report.found > 0 || report.runs.some((run) => run.status === 'failed')) process.exitCode = EXIT_FAILED;
    });
}
