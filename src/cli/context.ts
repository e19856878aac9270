import { InvalidArgumentError } from 'commander';
import { pino } from 'pino';
import { createInbox, databaseFailure, migrateStore } from '../app.js';
import { readConfig } from '../config/load.js';
import { readEnvironment, type ConfigVariable } from '../config/environment.js';
import { type Config } from '../config/settings.js';
import { ConfigError } from '../errors.js';
import type { Inbox } from '../inbox.js';
import { parseDuration, parseTimeReference } from '../config/duration.js';

/** Exit codes shared by every command: 1 = failed (or, for checks, "found something"), 2 = bad usage. */
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/**
 * The configuration from the environment over the .env file (`file`: which one, if any), and the
 * variables it was read from.
 */
export function configOrExit(): { config: Config; variables: ConfigVariable[]; file: string | null } {
  try {
    const environment = readEnvironment();
    return { ...readConfig(environment.variables), file: environment.file };
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      process.exit(EXIT_USAGE);
    }
    throw error;
  }
}

/**
 * Runs an operator command against the configured database: the same inbox (store, providers,
 * processor) the service uses, without HTTP or background workers. Logs go to stderr at `warn` unless
 * LOG_LEVEL asks for more, so stdout holds only the command's output.
 */
export async function withInbox<T>(config: Config, run: (inbox: Inbox) => Promise<T>): Promise<T> {
  const level = process.env.LOG_LEVEL ? config.logLevel : 'warn';
  const inbox = createInbox(config, { logger: pino({ level }, pino.destination({ dest: 2, sync: true })) });
  try {
    if (config.migrateOnStart) await migrateStore(inbox.store, config.databaseUrl);
    return await run(inbox);
  } catch (error) {
    throw inbox.store.isUnavailable(error) ? databaseFailure(config.databaseUrl, error) : error;
  } finally {
    // Not just the store: a Redis connection (REDIS_URL) would keep the command from exiting.
    await inbox.stop(0);
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
