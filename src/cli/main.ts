import '../supported-node.js';
import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import type { Logger } from 'pino';
import { migrateStore } from '../app.js';
import { maskedConfig, maskedVariables, variableLines } from '../config/display.js';
import { describeError } from '../errors.js';
import { OperationError } from '../ops/errors.js';
import { registerArchiveCommands } from './commands/archive.js';
import { registerCopyCommand } from './commands/copy.js';
import { registerDemoCommand } from './commands/demo.js';
import { registerEventsCommands } from './commands/events.js';
import { registerOutboxCommand } from './commands/outbox.js';
import { registerPaymentsCommands } from './commands/payments.js';
import { registerReconcileCommand } from './commands/reconcile.js';
import { registerReplayCommand } from './commands/replay.js';
import { registerSendCommand } from './commands/send.js';
import { registerStuckCommand } from './commands/stuck.js';
import { configOrExit, EXIT_FAILED, EXIT_USAGE, serviceLogger, withInbox } from './context.js';
import { serviceDomains } from '../service/domains.js';
import { setHeapGrowth } from './heap-growth.js';
import { printJson } from './output.js';
import { createService } from '../service/create-service.js';
import type { Service } from '../service/service.js';

/** The package's own version; package.json sits two levels up from src/cli and from dist/cli alike. */
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/** Thin commands: parse arguments, load the config, call the library, set the exit code. */
const program = new Command()
  .name('webhook-inbox')
  .description('Receive, verify, record and process payment webhooks exactly once')
  .version(version, '-V, --version', 'print the version')
  .showHelpAfterError()
  // A command's options before its subcommand are its own (`archive --json` and `archive search --json`).
  .enablePositionalOptions()
  // Bad usage exits 2, so scripts can tell it from "the check found something" (1).
  .exitOverride((error) => process.exit(error.exitCode === 0 ? 0 : EXIT_USAGE));

program
  .command('serve')
  .description('run the HTTP receiver, with background workers unless --no-workers')
  .option('--no-workers', 'receive only: separate `webhook-inbox worker` processes do the processing')
  .action(async (options: { workers: boolean }) => {
    const reading = configOrExit({ unknownVariables: 'returned' });
    const { config } = reading;
    setHeapGrowth(config.heapGrowthPercent);
    const { processing } = config;
    const threaded = processing.mode === 'background' && processing.thread.enabled;
    await run(
      await createService(config, {
        role: !options.workers ? 'receive' : threaded ? 'serve-with-thread' : 'serve',
        logger: serviceLogger(reading),
        domains: serviceDomains(config),
      }),
      config.shutdownTimeoutMs,
    );
  });

program
  .command('worker')
  .description('run background workers only: queue consumer and sweeper, WORKER_CONCURRENCY at a time; no HTTP but the management port, if set')
  .action(async () => {
    const reading = configOrExit({ unknownVariables: 'returned' });
    const { config } = reading;
    setHeapGrowth(config.heapGrowthPercent);
    await run(await createService(config, { role: 'work', logger: serviceLogger(reading), domains: serviceDomains(config) }), config.shutdownTimeoutMs);
  });

/** Starts `service` and its listeners; SIGTERM or SIGINT stops it (see Service.stop), and so does a listener that cannot start. */
async function run(service: Service, timeoutMs: number): Promise<void> {
  service.start();
  stopOnSignal(service.inbox.logger, timeoutMs, () => service.stop(timeoutMs));
  try {
    await service.listen();
  } catch (error) {
    await service.stop(timeoutMs);
    throw error;
  }
}

/** SIGTERM/SIGINT: stop gracefully, and exit anyway once the shutdown timeout (plus a margin) is over. */
function stopOnSignal(logger: Logger, timeoutMs: number, stop: () => Promise<unknown>): void {
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down: no new deliveries or claims, finishing in-flight work');
    const forced = setTimeout(() => {
      logger.error('shutdown took too long; exiting');
      process.exit(1);
    }, timeoutMs + 5000);
    forced.unref();
    stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'error during shutdown');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

program
  .command('migrate')
  .description('apply pending database migrations and exit')
  .option('--json', 'print JSON: {"applied": [<migration names>]}')
  .action(async (options: { json?: boolean }) => {
    const { config } = configOrExit();
    // The store of the inbox the service would run: its migrations with those of its domains.
    const applied = await withInbox({ ...config, migrateOnStart: false }, 'writes', (inbox) => migrateStore(inbox.store, config.databaseUrl));
    if (options.json) printJson({ applied });
    else console.log(applied.length > 0 ? `applied: ${applied.join(', ')}` : 'database is up to date');
  });

program
  .command('config')
  .description('print the effective configuration as the variables that set it (environment over .env), secrets masked')
  .option('--json', 'print JSON')
  .action((options: { json?: boolean }) => {
    const { config, variables, file, unknown, notices } = configOrExit({ unknownVariables: 'returned' });
    if (options.json) printJson({ envFile: file, variables: maskedVariables(variables), config: maskedConfig(config), warnings: unknown, notices });
    else {
      const warnings = [...unknown.map(({ message }) => message), ...notices].map((message) => `# warning: ${message}`);
      console.log([`# env file: ${file ?? 'none'} (the environment wins over it)`, ...warnings, ...variableLines(variables)].join('\n'));
    }
  });

registerEventsCommands(program);
registerPaymentsCommands(program);
registerReplayCommand(program);
registerStuckCommand(program);
registerReconcileCommand(program);
registerArchiveCommands(program);
registerCopyCommand(program);
registerSendCommand(program);
registerDemoCommand(program);
registerOutboxCommand(program, () => configOrExit().config);

let finished = false;
// A command waiting on a promise that never settles (a driver that drops a callback) would end with the
// event loop, exit code 0 and nothing said; a supervisor or a script must see it fail.
process.once('beforeExit', () => {
  if (finished) return;
  console.error('webhook-inbox: the command ended without finishing: something it waited for never answered');
  process.exit(EXIT_FAILED);
});

program
  .parseAsync()
  .then(() => (finished = true))
  .catch((error: unknown) => {
    console.error(`webhook-inbox: ${describeError(error)}`);
    const usage = error instanceof CommanderError || (error instanceof OperationError && error.code === 'bad_argument');
    process.exit(usage ? EXIT_USAGE : EXIT_FAILED);
  });
