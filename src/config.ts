import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { ConfigError } from './errors.js';
import { databaseUrlProblem } from './store/open-store.js';

export type ProcessingMode = 'background' | 'inline';

export interface StripeSettings {
  /** Every configured endpoint secret; during a roll both the old and the new one are accepted. */
  secrets: string[];
  toleranceSeconds: number;
}

export interface RazorpaySettings {
  secrets: string[];
}

export interface PayuSettings {
  merchantKey: string;
  merchantSalt: string;
}

/** Which providers are configured; a provider left `null` answers 503 (fails closed). */
export interface ProviderSettings {
  stripe: StripeSettings | null;
  razorpay: RazorpaySettings | null;
  payu: PayuSettings | null;
}

export interface ProcessingSettings {
  mode: ProcessingMode;
  leaseMs: number;
  concurrency: number;
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  sweepIntervalMs: number;
  inlineWaitMs: number;
  /** How long a delivery waits for its database insert before the answer is a 503. */
  recordTimeoutMs: number;
}

/** Set: the Redis Streams transport; null: in-process. */
export interface RedisSettings {
  url: string;
  stream: string;
}

export interface Config {
  host: string;
  port: number;
  databaseUrl: string;
  dbPoolSize: number;
  migrateOnStart: boolean;
  bodyLimitBytes: number;
  logLevel: string;
  shutdownTimeoutMs: number;
  providers: ProviderSettings;
  processing: ProcessingSettings;
  redis: RedisSettings | null;
}

/** The embedded store: runs on a fresh machine with nothing but Node. */
export const DEFAULT_DATABASE_URL = 'sqlite:./data/webhook-inbox.db';
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

type Env = Record<string, string | undefined>;

interface NumberRange {
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

/**
 * The environment over an optional .env file: the one `ENV_FILE` names (which must exist), else
 * `./.env` when present. A variable set in the real environment wins over the file.
 */
export function readEnvironment(env: Env = process.env, cwd = process.cwd()): Environment {
  const named = env.ENV_FILE?.trim();
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
  const variables: Env = parseEnv(text);
  for (const [name, value] of Object.entries(env)) if (value !== undefined) variables[name] = value;
  return { variables, file };
}

/**
 * Reads and validates the whole configuration from the environment (by default the process's, over
 * its .env file). Every problem is collected, so one start-up attempt names every bad variable.
 */
export function loadConfig(env: Env = readEnvironment().variables): Config {
  const problems: string[] = [];
  const read = new EnvReader(env, problems);

  const stripeSecrets = read.secretList('STRIPE_WEBHOOK_SECRET');
  const razorpaySecrets = read.secretList('RAZORPAY_WEBHOOK_SECRET');
  const toleranceSeconds = read.integer('STRIPE_TOLERANCE_SECONDS', 300, {
    min: 1,
    max: 86_400,
    hint: 'Stripe signs every retry afresh; 0 would turn off replay protection',
  });
  const payu = readPayu(read);
  const problemsBeforeRetry = problems.length;
  const retryBaseMs = Math.round(read.number('RETRY_BASE_SECONDS', 10, { min: 0, max: 86_400 }) * 1000);
  const retryMaxMs = Math.round(read.number('RETRY_MAX_SECONDS', 3600, { min: 0, max: 7 * 86_400 }) * 1000);
  // Compared only when both were read: a bad value is reported once, not again as a bad pair.
  if (problems.length === problemsBeforeRetry && retryMaxMs < retryBaseMs) {
    problems.push('RETRY_MAX_SECONDS must be at least RETRY_BASE_SECONDS');
  }

  const config: Config = {
    host: read.string('HOST', '0.0.0.0'),
    port: read.integer('PORT', 3000, { min: 0, max: 65_535 }),
    databaseUrl: read.databaseUrl('DATABASE_URL'),
    dbPoolSize: read.integer('DB_POOL_SIZE', 10, { min: 1, max: 1000 }),
    migrateOnStart: read.boolean('MIGRATE_ON_START', true),
    bodyLimitBytes: read.integer('BODY_LIMIT_BYTES', 1024 * 1024, { min: 1024, max: 64 * 1024 * 1024 }),
    logLevel: read.oneOf('LOG_LEVEL', LOG_LEVELS, 'info'),
    shutdownTimeoutMs: read.integer('SHUTDOWN_TIMEOUT_MS', 10_000, { min: 0, max: 600_000 }),
    providers: {
      stripe: stripeSecrets ? { secrets: stripeSecrets, toleranceSeconds } : null,
      razorpay: razorpaySecrets ? { secrets: razorpaySecrets } : null,
      payu,
    },
    processing: {
      mode: read.oneOf('PROCESSING_MODE', ['background', 'inline'] as const, 'background'),
      leaseMs: Math.round(read.number('LEASE_SECONDS', 30, { min: 0.1, max: 3600 }) * 1000),
      concurrency: read.integer('WORKER_CONCURRENCY', 4, { min: 1, max: 256 }),
      maxAttempts: read.integer('MAX_ATTEMPTS', 10, { min: 1, max: 1000 }),
      retryBaseMs,
      retryMaxMs,
      sweepIntervalMs: read.integer('SWEEP_INTERVAL_MS', 1000, { min: 10, max: 3_600_000 }),
      inlineWaitMs: read.integer('INLINE_WAIT_MS', 3000, { min: 0, max: 60_000 }),
      recordTimeoutMs: read.integer('RECORD_TIMEOUT_MS', 2000, { min: 100, max: 60_000, hint: 'providers time out after a few seconds' }),
    },
    redis: readRedis(read),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

function readPayu(read: EnvReader): PayuSettings | null {
  const merchantKey = read.optionalSecret('PAYU_MERCHANT_KEY');
  const merchantSalt = read.optionalSecret('PAYU_MERCHANT_SALT');
  if (merchantKey && merchantSalt) return { merchantKey, merchantSalt };
  // Judged on presence, not validity: a bad value is reported once, not again as a missing partner.
  const keySet = read.isSet('PAYU_MERCHANT_KEY');
  const saltSet = read.isSet('PAYU_MERCHANT_SALT');
  if (keySet && !saltSet) read.problem('PAYU_MERCHANT_SALT must be set when PAYU_MERCHANT_KEY is set');
  if (saltSet && !keySet) read.problem('PAYU_MERCHANT_KEY must be set when PAYU_MERCHANT_SALT is set');
  return null;
}

function readRedis(read: EnvReader): RedisSettings | null {
  const url = read.redisUrl('REDIS_URL');
  const stream = read.streamKey('REDIS_STREAM', 'webhook-inbox:events');
  return url ? { url, stream } : null;
}

class EnvReader {
  constructor(
    private readonly env: Env,
    private readonly problems: string[],
  ) {}

  problem(message: string): void {
    this.problems.push(message);
  }

  isSet(name: string): boolean {
    return this.raw(name) !== undefined;
  }

  private raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value.trim() === '' ? undefined : value.trim();
  }

  string(name: string, fallback: string): string {
    return this.raw(name) ?? fallback;
  }

  number(name: string, fallback: number, range: NumberRange): number {
    const raw = this.raw(name);
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

  boolean(name: string, fallback: boolean): boolean {
    const raw = this.raw(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
    if (['0', 'false', 'no', 'off'].includes(raw)) return false;
    this.problem(`${name} must be true or false (got "${raw}")`);
    return fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T): T {
    const raw = this.raw(name);
    if (raw === undefined) return fallback;
    if ((allowed as readonly string[]).includes(raw)) return raw as T;
    this.problem(`${name} must be one of ${allowed.join(', ')} (got "${raw}")`);
    return fallback;
  }

  /** A secret is reported by name only: its value never reaches a message or a log. */
  optionalSecret(name: string): string | undefined {
    const raw = this.raw(name);
    if (raw !== undefined && /\s/.test(raw)) {
      this.problem(`${name} contains whitespace; paste the value exactly as the provider shows it`);
      return undefined;
    }
    return raw;
  }

  /** Comma-separated secrets, so an old and a new secret can both be accepted during a rotation. */
  secretList(name: string): string[] | undefined {
    const raw = this.raw(name);
    if (raw === undefined) return undefined;
    const secrets = raw.split(',').map((s) => s.trim()).filter((s) => s !== '');
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

  /** Any Redis key would do; a printable one without spaces catches a mistyped value. */
  streamKey(name: string, fallback: string): string {
    const raw = this.raw(name);
    if (raw === undefined) return fallback;
    if (/^[\w:.\-{}]{1,200}$/.test(raw)) return raw;
    this.problem(`${name} must be up to 200 letters, digits and _ : . - { } (got "${raw}")`);
    return fallback;
  }

  /** Never echoes the value: a Redis URL may carry a password. */
  redisUrl(name: string): string | undefined {
    const raw = this.raw(name);
    if (raw === undefined) return undefined;
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      this.problem(`${name} is not a valid URL (expected redis://[:password@]host:6379[/db])`);
      return undefined;
    }
    if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') {
      this.problem(`${name} must start with redis:// or rediss:// (got "${url.protocol}//...")`);
      return undefined;
    }
    if (url.hostname === '') {
      this.problem(`${name} must name a host, e.g. redis://127.0.0.1:6379`);
      return undefined;
    }
    return raw;
  }

  databaseUrl(name: string): string {
    const raw = this.raw(name) ?? DEFAULT_DATABASE_URL;
    const problem = databaseUrlProblem(raw);
    if (problem) this.problem(`${name} ${problem}`);
    return raw;
  }
}
