import { userInfo } from 'node:os';
import { InvalidArgumentError, type Command } from 'commander';
import { Replayer, replayResultText, type ReplayItem, type ReplaySelection } from '../../ops/replay.js';
import { choiceOption, configOrExit, EXIT_FAILED, withInbox } from '../context.js';
import { listingOptions, type ListingFlags } from '../filters.js';
import { printJson, printTable, progressBar, type Column } from '../output.js';

interface ReplayFlags extends ListingFlags {
  status?: 'failed' | 'processed';
  type?: string;
  dryRun?: boolean;
  reason?: string;
  actor?: string;
}

export function registerReplayCommand(program: Command): void {
  listingOptions(program.command('replay [event-ids...]').description('process stored events again, oldest first, through the same lease and fencing as live traffic'), {
    rows: 'events',
    written: 'received',
    limit: 1000,
  })
    .option('--status <status>', 'replay every event in this status (failed or processed) matching the filters', choiceOption(['failed', 'processed'] as const))
    .option('--type <event-type>', 'only this event type')
    .option('--dry-run', 'print what would be replayed and the payment change each would cause')
    .option('--reason <text>', 'why (required unless --dry-run; recorded with each replay)')
    .option('--actor <name>', 'who is replaying (default: the OS user)')
    .action(async (ids: string[], flags: ReplayFlags) => {
      const selection = replaySelection(ids, flags);
      const config = configOrExit().config;
      const progress = progressBar(flags.dryRun ? 'checking' : 'replaying');
      const report = await withInbox(config, flags.dryRun ? 'reads' : 'writes', (inbox) =>
        new Replayer(inbox).runOnce(selection, {
          dryRun: flags.dryRun === true,
          actor: flags.actor ?? userInfo().username,
          reason: flags.reason,
          onProgress: progress.update,
        }),
      );
      progress.done();
      if (flags.json) printJson(report);
      else if (report.items.length === 0) console.log('nothing to replay');
      else {
        const columns: Array<Column<ReplayItem>> = [
          ['id', (i) => i.id],
          ['provider', (i) => i.provider],
          ['event id', (i) => i.eventId],
          ['type', (i) => i.eventType],
          ['was', (i) => i.previousStatus],
        ];
        if (report.dryRun) columns.push(['payment change', (i) => i.transition]);
        columns.push(['result', replayResultText, 'whole']);
        printTable(report.items, columns);
        if (!report.dryRun) console.log(`${report.counts.processed} processed, ${report.counts.failed} failed, ${report.counts.skipped} skipped`);
        if (report.more) console.log(`more events match than --limit ${flags.limit}; run again to continue`);
      }
      if (report.counts.failed > 0) process.exitCode = EXIT_FAILED;
    });
}

function replaySelection(ids: string[], flags: ReplayFlags): ReplaySelection {
  const filtered = flags.type !== undefined || flags.payment !== undefined || flags.since !== undefined || flags.until !== undefined;
  if (ids.length > 0 && flags.status) throw new InvalidArgumentError('give event ids or --status, not both');
  if (ids.length > 0) {
    if (filtered) throw new InvalidArgumentError('--type, --payment, --since and --until select by --status; with event ids, leave them out');
    return { kind: 'events', refs: ids, provider: flags.provider };
  }
  if (!flags.status) throw new InvalidArgumentError('name the events to replay, or select them with --status failed');
  return {
    kind: 'filter',
    filter: { status: flags.status, provider: flags.provider, paymentId: flags.payment, type: flags.type, from: flags.since, to: flags.until, limit: flags.limit },
  };
}
