import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { resolve } from 'node:path';
// Not a named import: parseEnv came with Node 20.12, and an older Node must get as far as the version
// check (supported-node.ts) instead of failing to link this module.
import * as util from 'node:util';
import { Cron } from 'croner';
import addressparser from 'nodemailer/lib/addressparser';
import { ConfigError } from '../errors.js';
import { parseDuration } from './duration.js';

export type Env = Record<string, string | undefined>;

export interface NumberRange {
  min: number;
  max: number;
  integer?: boolean;
  hint?: string;
}

export interface Environment {
  variables: Env;
  /** The .env file read beneath the real environment, or null when there was none. */
  file: string | null;
}

/** The one variable read before the others: it names the file they may come from. */
export const ENV_FILE_VARIABLE = 'ENV_FILE';

/**
 * The environment over an optional .env file: the one `ENV_FILE` names (which must exist), else
 * `./.env` when present. A variable set in the real environment wins over the file.
 */
export function readEnvironment(env: Env = process.env, cwd = process.cwd()): Environment {
  const named = env[ENV_FILE_VARIABLE]?.trim();
  const file = resolve(cwd, named || '.env');
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (!named && code === 'ENOENT') return { variables: env, file: null };
    const reason = code ?? (error as Error).message;
    throw new ConfigError([named ? `ENV_FILE names ${file}, which cannot be read (${reason})` : `${file} cannot be read (${reason})`]);
  }
  const variables: Env = util.parseEnv(text);
  for (const [name, value] of Object.entries(env)) if (value !== undefined) variables[name] = value;
  return { variables, file };
}

/** Dot-separated DNS labels: letters, digits and inner hyphens, 63 characters at most each. */
const HOST_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/** One variable as `webhook-inbox config` shows it: as set, or its default. */
export interface ConfigVariable {
  name: string;
  /** The value set, else the default; null when neither. */
  value: string | null;
  isDefault: boolean;
  /** Secrets and URLs (which may hold a password) are shown masked. */
  kind: 'plain' | 'secret' | 'url';
}

export class EnvReader {
  /** Every variable read, in the order read. */
  readonly variables = new Map<string, ConfigVariable>();

  constructor(
    private readonly env: Env,
    private readonly problems: string[],
  ) {}

  problem(message: string): void {
    this.problems.push(message);
  }

  problemCount(): number {
    return this.problems.length;
  }

  isSet(name: string): boolean {
    return this.raw(name) !== undefined;
  }

  private raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  }

  /** The variable's value, if set; noted, with the default shown when it is not, for `config`. */
  private read(name: string, fallback: string | null, kind: ConfigVariable['kind'] = 'plain'): string | undefined {
    const raw = this.raw(name);
    this.variables.set(name, { name, value: raw ?? (fallback || null), isDefault: raw === undefined, kind });
    return raw;
  }

  string(name: string, fallback: string, kind: ConfigVariable['kind'] = 'plain'): string {
    return this.read(name, fallback, kind) ?? fallback;
  }

  number(name: string, fallback: number, range: NumberRange): number {
    const raw = this.read(name, String(fallback));
    if (raw === undefined) return fallback;
    const value = Number(raw);
    const pattern = range.integer ? /^\d+$/ : /^\d+(\.\d+)?$/;
    if (!pattern.test(raw) || value < range.min || value > range.max) {
      const kind = range.integer ? 'an integer' : 'a number';
      const hint = range.hint ? `; ${range.hint}` : '';
      this.problem(`${name} must be ${kind} from ${range.min} to ${range.max} (got "${raw}")${hint}`);
      return fallback;
    }
    return value;
  }

  integer(name: string, fallback: number, range: Omit<NumberRange, 'integer'>): number {
    return this.number(name, fallback, { ...range, integer: true });
  }

  /** An integer with no default: undefined when unset (or invalid, which is a problem reported). */
  optionalInteger(name: string, range: Omit<NumberRange, 'integer'>): number | undefined {
    if (this.isSet(name)) {
      const problems = this.problemCount();
      const value = this.integer(name, 0, range);
      return this.problemCount() === problems ? value : undefined;
    }
    this.read(name, null);
    return undefined;
  }

  boolean(name: string, fallback: boolean): boolean {
    const raw = this.read(name, String(fallback))?.toLowerCase();
    if (raw === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
    if (['0', 'false', 'no', 'off'].includes(raw)) return false;
    this.problem(`${name} must be true or false (got "${raw}")`);
    return fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const raw = this.read(name, fallback);
    if (raw === undefined) return fallback;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    this.problem(`${name} must be one of ${allowed.join(', ')} (got "${raw}")`);
    return fallback;
  }

  /** An IP address or a host name as DNS spells it; whether it resolves shows when the server listens. */
  host(name: string, fallback: string): string {
    const raw = this.read(name, fallback);
    if (raw === undefined) return fallback;
    if (isIP(raw) === 0 && !HOST_NAME.test(raw)) {
      this.problem(`${name} must be an IP address or a host name, e.g. 0.0.0.0, 127.0.0.1 or ::1 (got "${raw}")`);
      return fallback;
    }
    return raw;
  }

  /** A secret is reported by name only: its value never reaches a message or a log. */
  optionalSecret(name: string): string | undefined {
    const raw = this.read(name, null, 'secret');
    if (raw !== undefined && /\s/.test(raw)) {
      this.problem(`${name} contains whitespace; paste the value exactly as the provider shows it`);
      return undefined;
    }
    return raw;
  }

  /** Comma-separated secrets, so an old and a new secret can both be accepted during a rotation. */
  secretList(name: string): string[] | undefined {
    const raw = this.read(name, null, 'secret');
    if (raw === undefined) return undefined;
    const secrets = raw
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
    if (secrets.length === 0) {
      this.problem(`${name} holds no secret (expected one or more comma-separated values)`);
      return undefined;
    }
    if (secrets.some((s) => /\s/.test(s))) {
      this.problem(`${name} contains a secret with whitespace inside; separate several secrets with commas only`);
      return undefined;
    }
    return secrets;
  }

  duration(name: string, fallback: string): number {
    const raw = this.read(name, fallback) ?? fallback;
    try {
      return parseDuration(raw);
    } catch (error) {
      this.problem(`${name}: ${(error as Error).message}`);
      return parseDuration(fallback);
    }
  }

  /** A duration, or "off" (the default) for none. */
  optionalDuration(name: string): number | null {
    const raw = this.read(name, 'off');
    if (raw === undefined || raw.toLowerCase() === 'off') return null;
    try {
      return parseDuration(raw);
    } catch (error) {
      this.problem(`${name}: ${(error as Error).message}, or "off"`);
      return null;
    }
  }

  /** A cron expression (5 or 6 fields, UTC), or "off" for none. */
  cron(name: string, fallback: string | null): string | null {
    const raw = this.read(name, fallback ?? 'off');
    if (raw === undefined) return fallback;
    if (raw.toLowerCase() === 'off') return null;
    try {
      new Cron(raw, { paused: true }).stop();
      return raw;
    } catch (error) {
      this.problem(`${name} is not a cron expression (got "${raw}": ${(error as Error).message}); e.g. "0 9 * * *", or "off"`);
      return fallback;
    }
  }

  /** Any Redis key would do; a printable one without spaces catches a mistyped value. */
  streamKey(name: string, fallback: string): string {
    const raw = this.read(name, fallback);
    if (raw === undefined) return fallback;
    if (/^[\w:.\-{}]{1,200}$/.test(raw)) return raw;
    this.problem(`${name} must be up to 200 letters, digits and _ : . - { } (got "${raw}")`);
    return fallback;
  }

  /** An optional URL with one of `schemes`; the value is never echoed (it may hold a password). */
  url(name: string, schemes: string[], example: string): string | undefined {
    const raw = this.read(name, null, 'url');
    if (raw === undefined) return undefined;
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      this.problem(`${name} is not a valid URL (expected e.g. ${example})`);
      return undefined;
    }
    if (!schemes.includes(url.protocol) || url.hostname === '') {
      this.problem(`${name} must be a ${schemes.map((s) => s.replace(':', '')).join(' or ')} URL with a host (e.g. ${example})`);
      return undefined;
    }
    return raw;
  }

  /** One address, bare or with a display name: `receipts@shop.example` or `Shop <receipts@shop.example>`. */
  mailAddress(name: string): string | undefined {
    const raw = this.read(name, null);
    if (raw === undefined) return undefined;
    const addresses = addressparser(raw, { flatten: true });
    if (addresses.length !== 1 || !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(addresses[0]!.address)) {
      this.problem(`${name} must be one e-mail address, e.g. receipts@shop.example or "Shop <receipts@shop.example>" (got "${raw}")`);
      return undefined;
    }
    return raw;
  }
}

/**
 * What a domain reads its own settings with (`PaymentDomain.settings`): the same reader as the
 * inbox's, so its variables are validated at start with the rest, every problem named with its
 * variable in one error, and `webhook-inbox config` shows them.
 */
export type SettingsReader = Pick<
  EnvReader,
  | 'problem'
  | 'isSet'
  | 'string'
  | 'number'
  | 'integer'
  | 'optionalInteger'
  | 'boolean'
  | 'oneOf'
  | 'host'
  | 'optionalSecret'
  | 'secretList'
  | 'duration'
  | 'optionalDuration'
  | 'cron'
  | 'url'
  | 'mailAddress'
>;
