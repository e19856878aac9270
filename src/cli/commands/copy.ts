import { InvalidArgumentError, type Command } from 'commander';
import { databaseUrlProblem } from '../../config/database-url.js';
import { maskUrl } from '../../config/display.js';
import { backendFor } from '../../db/open-database.js';
import { copyInstallation, DEFAULT_COPY_BATCH, MAX_COPY_BATCH, type TableReport } from '../../ops/copy/copy-installation.js';
import { configOrExit, EXIT_FAILED, wholeNumberOption, withInbox } from '../context.js';
import { printJson, printTable, progressBar } from '../output.js';

interface CopyFlags {
  from: string;
  to: string;
  merge?: boolean;
  batchSize: number;
  json?: boolean;
}

function databaseUrlOption(value: string): string {
  const problem = databaseUrlProblem(value);
  if (problem) throw new InvalidArgumentError(problem);
  return value;
}

export function registerCopyCommand(program: Command): void {
  program
    .command('copy')
    .description('copy an installation (events, archived keys, business tables, outbox, replays) into another store, resumably, verified by counts and checksums')
    .requiredOption('--from <url>', 'the source database (a DATABASE_URL); only read', databaseUrlOption)
    .requiredOption('--to <url>', 'the target database (a DATABASE_URL); created and migrated when missing', databaseUrlOption)
    .option('--merge', 'copy into a target that already holds events (rows it has by id or key are left as they are)')
    .option('--batch-size <rows>', 'rows per batch, each one transaction in the target', wholeNumberOption(MAX_COPY_BATCH), DEFAULT_COPY_BATCH)
    .option('--json', 'print JSON')
    .action(async (flags: CopyFlags) => {
      const config = configOrExit().config;
      const report = await withInbox({ ...config, databaseUrl: flags.from, migrateOnStart: false }, 'writes', (source) =>
        withInbox({ ...config, databaseUrl: flags.to, migrateOnStart: true }, 'writes', (target) =>
          copyInstallation(
            { db: source.database, backend: backendFor(flags.from), url: flags.from },
            { db: target.database, backend: backendFor(flags.to), url: flags.to },
            { merge: flags.merge === true, batchSize: flags.batchSize, onProgress: progress() },
          ),
        ),
      );
      if (flags.json) printJson(report);
      else {
        console.log(`${report.resumed ? 'resumed a copy' : 'copied'} from ${maskUrl(flags.from)} to ${maskUrl(flags.to)}`);
        printTable(report.tables, [
          ['table', (t: TableReport) => t.table],
          ['source rows', (t) => t.sourceRows],
          ['target rows', (t) => t.targetRows],
          ['copied now', (t) => t.copiedNow],
          ['checksum (sha-256)', (t) => t.sourceChecksum.slice(0, 16)],
          ['verified', (t) => (t.verified ? 'yes' : `NO: target ${t.targetChecksum.slice(0, 16)}`)],
        ]);
        console.log(report.verified ? 'every table verified' : 'verification FAILED: the target differs from the source');
      }
      if (!report.verified) process.exitCode = EXIT_FAILED;
    });
}

/**
 * A bar per table on a terminal; elsewhere (a log, a pipe) a line on stderr as each table is done, so
 * a long copy shows where it is without filling the log.
 */
function progress(): (table: string, copied: number, total: number) => void {
  let current: { table: string; bar: ReturnType<typeof progressBar> } | null = null;
  const terminal = process.stdout.isTTY && process.stderr.isTTY;
  return (table, copied, total) => {
    if (current?.table !== table) {
      current?.bar.done();
      current = { table, bar: progressBar(`copying ${table}`) };
    }
    current.bar.update(copied, total);
    if (copied >= total) {
      current.bar.done();
      if (!terminal) process.stderr.write(`copy: ${table} ${copied}/${total} rows\n`);
    }
  };
}
