import { Option, type Command } from 'commander';
import { Archiver } from '../../ops/archive/archiver.js';
import { openArchive } from '../../ops/archive/open-storage.js';
import { rekeyArchive } from '../../ops/archive/rekey.js';
import { UNENCRYPTED_ARCHIVE } from '../../config/load.js';
import type { ArchivedEvent } from '../../ops/archive/files.js';
import { describeQuery, restoreFromArchive, searchArchive, type ArchiveQuery } from '../../ops/archive/restore.js';
import { shownOutcome } from '../../model/outcome.js';
import { shownHeaders, shownPayload } from '../../model/secrets.js';
import { OperationError } from '../../ops/errors.js';
import { ProviderRegistry } from '../../providers/registry.js';
import { configOrExit, durationOption, positiveIntegerOption, withInbox } from '../context.js';
import { printJson, printTable, progressBar } from '../output.js';

interface QueryFlags {
  from: string;
  event?: string;
  payment?: string;
  day?: string;
  json?: boolean;
}

/** --event / --payment / --day: exactly one. */
function queryOptions(command: Command): Command {
  return command
    .requiredOption('--from <location>', 'the archive: its directory or s3://bucket/prefix (where manifest.json is)')
    .addOption(new Option('--event <id>', 'one event: provider event id or row id').conflicts(['payment', 'day']))
    .addOption(new Option('--payment <id>', "every event of one payment (the provider's payment id)").conflicts(['day']))
    .option('--day <date>', 'every event received that day (UTC), e.g. 2024-05-01')
    .option('--json', 'print JSON');
}

function archiveQuery(flags: QueryFlags): ArchiveQuery {
  if (flags.event) return { event: flags.event };
  if (flags.payment) return { payment: flags.payment };
  if (flags.day) return { day: flags.day };
  throw new OperationError('say what to look for: --event <id>, --payment <id> or --day <date>', 'bad_argument');
}

/** Normalisers need no secrets: reading archived events works with no provider configured. */
const readOnlyProviders = () => new ProviderRegistry({ stripe: null, razorpay: null, payu: null });

export function registerArchiveCommands(program: Command): void {
  const archive = program
    .command('archive')
    .description('move processed events older than a cutoff into gzip JSON Lines files per day, with a verified manifest')
    .option('--older-than <duration>', 'archive events received longer ago than this (default ARCHIVE_OLDER_THAN, 90d)', durationOption)
    .option('--to <location>', 'archive directory or s3://bucket/prefix (default ARCHIVE_TO)')
    .option('--events-per-file <n>', 'at most this many events per file', positiveIntegerOption, 2000)
    .option('--batch-size <n>', 'rows verified and deleted per statement', positiveIntegerOption, 500)
    .option('--json', 'print JSON')
    // Its options go before `search`, so that `archive search --json` is the search's own.
    .enablePositionalOptions()
    .action(async (flags: { olderThan?: number; to?: string; eventsPerFile: number; batchSize: number; json?: boolean }) => {
      const config = configOrExit().config;
      const to = flags.to ?? config.operations.archive.to;
      if (!to) throw new OperationError('say where the archive goes: --to <dir or s3://bucket/prefix> (or set ARCHIVE_TO)', 'bad_argument');
      const opened = openArchive(to, config.operations.archive);
      const keyId = opened.keyring.sealingKeyId;
      if (keyId === null && !flags.json) console.error(`webhook-inbox: warning: ${UNENCRYPTED_ARCHIVE}`);
      const progress = progressBar('archiving');
      const report = await withInbox(config, 'writes', (inbox) =>
        new Archiver(inbox).runOnce({
          archive: opened,
          olderThanMs: flags.olderThan ?? config.operations.archive.olderThanMs,
          eventsPerFile: flags.eventsPerFile,
          deleteBatchSize: flags.batchSize,
          onProgress: progress.update,
        }),
      );
      progress.done();
      if (flags.json) return printJson({ ...report, keyId });
      if (report.parts.length > 0) {
        printTable(report.parts, [
          ['file', (p) => p.file],
          ['events', (p) => p.events],
          ['deleted', (p) => p.deleted],
          ['kept', (p) => p.kept],
          ['bytes', (p) => p.bytes],
          ['sha256', (p) => p.sha256.slice(0, 16)],
          ['note', (p) => (p.resumed ? 'finished an interrupted run' : '')],
        ]);
      }
      const rate = report.elapsedMs > 0 ? ` (${Math.round((report.archived * 1000) / report.elapsedMs)} events/s)` : '';
      console.log(`archived ${report.archived} events received before ${report.cutoff} into ${report.dir} in ${report.elapsedMs} ms${rate}`);
      if (report.kept > 0) console.log(`${report.kept} events changed after they were written (e.g. replayed) and stay in the database`);
    });

  archive
    .command('rekey')
    .description('seal every file of an archive under the first key of ARCHIVE_ENCRYPTION_KEY (after a rotation, or to encrypt an archive written without one)')
    .option('--from <location>', 'the archive: its directory or s3://bucket/prefix (default ARCHIVE_TO)')
    .option('--json', 'print JSON')
    .action(async (flags: { from?: string; json?: boolean }) => {
      const { config } = configOrExit();
      const from = flags.from ?? config.operations.archive.to;
      if (!from) throw new OperationError('say which archive: --from <dir or s3://bucket/prefix> (or set ARCHIVE_TO)', 'bad_argument');
      const progress = progressBar('rekeying');
      const report = await withInbox(config, 'writes', (inbox) => rekeyArchive(inbox, openArchive(from, config.operations.archive), progress.update));
      progress.done();
      if (flags.json) return printJson(report);
      if (report.rekeyed.length > 0) {
        printTable(report.rekeyed, [
          ['file', (r) => r.to],
          ['was', (r) => r.from],
          ['key before', (r) => r.previousKeyId ?? 'none (unencrypted)'],
          ['events', (r) => r.events],
        ]);
      }
      console.log(`${report.rekeyed.length} files sealed under key id ${report.keyId}, ${report.current} already were, in ${report.location}`);
    });

  queryOptions(archive.command('search').description('find archived events without restoring them, newest first')).action(async (flags: QueryFlags) => {
    const matches = (await searchArchive(openArchive(flags.from, configOrExit().config.operations.archive), archiveQuery(flags), readOnlyProviders())).reverse();
    if (flags.json)
      return printJson(
        matches.map(({ file, event }) => ({
          file,
          event: { ...shownArchivedEvent(event), headers: JSON.stringify(shownHeaders(event.headers)), payload: shownPayload(event.payload) },
        })),
      );
    if (matches.length === 0) {
      console.log(`nothing in ${flags.from} matches ${describeQuery(archiveQuery(flags))}`);
      process.exitCode = 1;
      return;
    }
    printTable(matches, [
      ['id', (m) => m.event.id],
      ['provider', (m) => m.event.provider],
      ['event id', (m) => m.event.event_id],
      ['type', (m) => m.event.event_type],
      ['received (UTC)', (m) => m.event.created_at],
      ['outcome', (m) => shownArchivedEvent(m.event).outcome],
      ['file', (m) => m.file],
    ]);
  });

  queryOptions(program.command('restore').description('bring archived events back into the database (for inspection or replay)')).action(async (flags: QueryFlags) => {
    const query = archiveQuery(flags);
    const { config } = configOrExit();
    const report = await withInbox(config, 'writes', (inbox) => restoreFromArchive(inbox.store, openArchive(flags.from, config.operations.archive), query, readOnlyProviders()));
    if (flags.json) return printJson(report);
    printTable(report.events, [
      ['id', (e) => e.id],
      ['provider', (e) => e.provider],
      ['event id', (e) => e.eventId],
      ['type', (e) => e.eventType],
      ['received (UTC)', (e) => e.createdAt],
      ['result', (e) => (e.restored ? 'restored' : 'already in the database')],
    ]);
    console.log(`${report.restored} restored, ${report.present} already present; "webhook-inbox replay <id> --reason ..." processes one again`);
  });
}

/** An archived event with its outcome as readers show it: `outcome` in words, `outcome_detail` structured (null in files written before there was one). */
function shownArchivedEvent(event: ArchivedEvent) {
  const { outcome, outcomeDetail } = shownOutcome(event.outcome, event.outcome_detail ?? null);
  return { ...event, outcome, outcome_detail: outcomeDetail };
}
