import { ConfigError } from './errors.js';

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

export const DEFAULT_DATABASE_URL = 'mysql://root@127.0.0.1:3306/webhook_inbox';
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

type Env = Record<string, string | undefined>;

interface NumberRange {
  min: number;
  max: number;
  integer?: boolean;
  hint?: string;
}

/**
 * Reads and validates the whole configuration from the environment. Every problem is collected, so
 * one start-up attempt names every bad variable at once.
 */
export function loadConfig(env: Env = process.env): Config {
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
  if (merchantKey) read.problem('PAYU_MERCHANT_SALT must be set when PAYU_MERCHANT_KEY is set');
  if (merchantSalt) read.problem('PAYU_MERCHANT_KEY must be set when PAYU_MERCHANT_SALT is set');
  return null;
}

function readRedis(read: EnvReader): RedisSettings | null {
  const url = read.redisUrl('REDIS_URL');
  const stream = read.string('REDIS_STREAM', 'webhook-inbox:events');
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
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      this.problem(`${name} is not a valid URL (expected mysql://user:password@host:3306/database)`);
      return DEFAULT_DATABASE_URL;
    }
    if (url.protocol !== 'mysql:') {
      this.problem(`${name} must start with mysql:// (got "${url.protocol}//...")`);
    } else if (url.pathname.replace(/^\//, '') === '') {
      this.problem(`${name} must name a database, e.g. mysql://user@host:3306/webhook_inbox`);
    }
    return raw;
  }
}
