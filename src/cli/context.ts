import { existsSync } from 'node:fs';
import { InvalidArgumentError } from 'commander';
import { pino, type Logger } from 'pino';
import { createInbox, databaseFailure, migrateStore } from '../app.js';
import { readConfig, type ConfigReading } from '../config/load.js';
import { readEnvironment } from '../config/environment.js';
import { storeLocation } from '../config/display.js';
import { type Config } from '../config/settings.js';
import { createLogger } from '../observability/logger.js';
import { ConfigError } from '../errors.js';
import type { Inbox } from '../inbox.js';
import { parseDuration, parseTimeReference } from '../config/duration.js';
import { SERVICE_DOMAINS, serviceDomains } from '../service/domains.js';

/** Exit codes shared by every command: 1 = failed (or, for checks, "found something"), 2 = bad usage. */
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/**
 * The configuration from the environment over the .env file (`file`: which one, if any), the
 * variables it was read from, and those set that configure nothing but look meant to. Those are
 * warned about on stderr, unless `unknownVariables: 'returned'` leaves that to the caller (the
 * service logs them; `config` prints them with the rest).
 */
export function configOrExit({ unknownVariables = 'warned' }: { unknownVariables?: 'warned' | 'returned' } = {}): ConfigReading & { file: string | null } {
  try {
    const environment = readEnvironment();
    const reading = readConfig(environment.variables, { domains: SERVICE_DOMAINS });
    if (unknownVariables === 'warned') for (const { message } of reading.unknown) console.error(`webhook-inbox: warning: ${message}`);
    return { ...reading, file: environment.file };
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(EXIT_USAGE);
    }
    throw error;
  }
}

/** The logger of `serve` and `worker`: its first lines warn of the variables that configure nothing. */
export function serviceLogger({ config, unknown, notices }: ConfigReading): Logger {
  const logger = createLogger(config.logLevel);
  for (const { variable, resembles, message } of unknown) logger.warn({ variable, resembles }, message);
  for (const notice of notices) logger.warn(notice);
  return logger;
}

/**
 * What a command does with the database, declared where it opens the inbox. `reads`: it only looks,
 * so it never changes the schema; with migrations pending it stops and names them. `writes`: it
 * applies pending migrations first, unless MIGRATE_ON_START=false.
 */
export type DatabaseAccess = 'reads' | 'writes';

/**
 * Runs an operator command against the configured database: the same inbox (store, providers,
 * processor, domains) the service uses, without HTTP or background workers. Logs go to stderr at `warn` unless
 * LOG_LEVEL asks for more, so stdout holds only the command's output.
 */
export async function withInbox<T>(config: Config, access: DatabaseAccess, run: (inbox: Inbox) => Promise<T>): Promise<T> {
  if (access === 'reads') refuseMissingSqliteFile(config.databaseUrl);
  const level = process.env.LOG_LEVEL ? config.logLevel : 'warn';
  const inbox = createInbox(config, { logger: pino({ level }, pino.destination({ dest: 2, sync: true })), domains: serviceDomains(config) });
  try {
    if (access === 'reads') await refusePendingMigrations(inbox, config.databaseUrl);
    else if (config.migrateOnStart) await migrateStore(inbox.store, config.databaseUrl);
    return await run(inbox);
  } catch (error) {
    throw inbox.store.isUnavailable(error) ? databaseFailure(config.databaseUrl, error) : error;
  } finally {
    // Not just the store: a Redis connection (REDIS_URL) would keep the command from exiting.
    await inbox.stop(0);
  }
}

/** Opening a SQLite file creates it: a command that only reads leaves no empty file behind a mistyped path. */
function refuseMissingSqliteFile(databaseUrl: string): void {
  if (!databaseUrl.startsWith('sqlite:')) return;
  const file = storeLocation(databaseUrl);
  if (!existsSync(file)) throw new Error(`no database at ${file} (DATABASE_URL): this command only reads; \`webhook-inbox migrate\` or \`serve\` creates it`);
}

/** A command that only reads would find tables missing or half made: it asks for `migrate` instead. */
async function refusePendingMigrations(inbox: Inbox, databaseUrl: string): Promise<void> {
  let pending: string[];
  try {
    pending = await inbox.store.pendingMigrations();
  } catch (error) {
    throw databaseFailure(databaseUrl, error);
  }
  if (pending.length > 0) {
    throw new Error(
      `the database is not up to date: ${pending.length === 1 ? 'migration' : 'migrations'} ${pending.join(', ')} not applied; this command only reads and never changes the schema: run \`webhook-inbox migrate\` first`,
    );
  }
}

/** Commander option parsers: a bad value is reported as a usage error naming the option. */
export function durationOption(value: string): number {
  try {
    return parseDuration(value);
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

export function timeOption(value: string): Date {
  try {
    return parseTimeReference(value, new Date());
  } catch (error) {
    throw new InvalidArgumentError((error as Error).message);
  }
}

/** A whole number from 1 to `max`: a count, a limit or a row id. */
export function wholeNumberOption(max: number): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value) || Number(value) < 1 || Number(value) > max) throw new InvalidArgumentError(`expected a whole number from 1 to ${max}`);
    return Number(value);
  };
}

export const positiveIntegerOption = wholeNumberOption(1_000_000);

export function choiceOption<T extends string>(choices: readonly T[]): (value: string) => T {
  return (value) => {
    if (!(choices as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${choices.join(', ')}`);
    return value as T;
  };
}
