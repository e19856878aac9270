import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { isIP } from 'node:net';
import { parseEnv } from 'node:util';
import addressparser from 'nodemailer/lib/addressparser';
import { Cron } from 'croner';
import { ConfigError } from './errors.js';
import { DEFAULT_PAYU_BODY_LIMIT_BYTES } from './http/webhook-routes.js';
import { parseDuration } from './ops/duration.js';
import { databaseUrlProblem, DEFAULT_RECORD_CONNECTIONS } from './store/open-store.js';

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

/** Scheduled operator jobs (cron expressions in UTC; null = off) and where alerts go. */
export interface OperationsSettings {
  alertWebhookUrl: string | null;
  /** olderThanMs: for received events; outboxOlderThanMs: for pending outbox rows. */
  stuckCheck: { cron: string | null; olderThanMs: number; outboxOlderThanMs: number };
  archive: { cron: string | null; dir: string | null; olderThanMs: number };
}

export interface SmtpSettings {
  /** smtp:// or smtps:// with credentials; never logged. */
  url: string;
  from: string;
  timeoutMs: number;
}

export interface FulfilmentSettings {
  url: string;
  timeoutMs: number;
}

/** Where side effects go; a transport left `null` marks its outbox rows `skipped`. */
export interface OutboxSettings {
  /** Deliveries in flight at once (each an SMTP or HTTP call), per process. */
  concurrency: number;
  smtp: SmtpSettings | null;
  fulfilment: FulfilmentSettings | null;
}

/** Bounds on how long the HTTP server waits for a client (slow or stalled requests, idle connections). */
export interface HttpSettings {
  /** From the first byte of a request to the end of its headers. */
  headersTimeoutMs: number;
  /** From the first byte of a request to the end of its body. */
  requestTimeoutMs: number;
  /** A keep-alive connection with no request in flight. */
  idleTimeoutMs: number;
}

export interface Config {
  host: string;
  port: number;
  databaseUrl: string;
  dbPoolSize: number;
  /** Connections that record deliveries, a group-commit batch at a time on each (MySQL). */
  dbRecordConnections: number;
  migrateOnStart: boolean;
  bodyLimitBytes: number;
  /** PayU's own body limit: its callbacks are a few KB, and must be parsed before they can be verified. */
  payuBodyLimitBytes: number;
  http: HttpSettings;
  logLevel: string;
  shutdownTimeoutMs: number;
  /** V8's old-generation growth after each full collection, in percent; 0 leaves V8 its own factor. */
  heapGrowthPercent: number;
  providers: ProviderSettings;
  processing: ProcessingSettings;
  redis: RedisSettings | null;
  operations: OperationsSettings;
  outbox: OutboxSettings;
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

/** Dot-separated DNS labels: letters, digits and inner hyphens, 63 characters at most each. */
const HOST_NAME = /^[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/**
 * Reads and validates the whole configuration from the environment (by default the process's, over
 * its .env file). Every problem is collected, so one start-up attempt names every bad variable.
 */
export function loadConfig(env: Env = readEnvironment().variables): Config {
  return readConfig(env).config;
}

/** One variable as `webhook-inbox config` shows it: as set, or its default. */
export interface ConfigVariable {
  name: string;
  /** The value set, else the default; null when neither. */
  value: string | null;
  isDefault: boolean;
  /** Secrets and URLs (which may hold a password) are shown masked. */
  kind: 'plain' | 'secret' | 'url';
}

/** The configuration and the variables it was read from, with their defaults. */
export function readConfig(env: Env): { config: Config; variables: ConfigVariable[] } {
  const problems: string[] = [];
  const read = new EnvReader(env, problems);

  const stripeSecrets = read.secretList('STRIPE_WEBHOOK_SECRET');
  if (stripeSecrets?.some((secret) => !secret.startsWith('whsec_'))) {
    problems.push("STRIPE_WEBHOOK_SECRET must be the endpoint's signing secret, which starts with whsec_ (not an API key)");
  }
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
    host: read.host('HOST', '0.0.0.0'),
    port: read.integer('PORT', 3000, { min: 0, max: 65_535 }),
    databaseUrl: read.databaseUrl('DATABASE_URL'),
    dbPoolSize: read.integer('DB_POOL_SIZE', 10, { min: 1, max: 1000 }),
    dbRecordConnections: read.integer('DB_RECORD_CONNECTIONS', DEFAULT_RECORD_CONNECTIONS, { min: 1, max: 64 }),
    migrateOnStart: read.boolean('MIGRATE_ON_START', true),
    bodyLimitBytes: read.integer('BODY_LIMIT_BYTES', 1024 * 1024, { min: 1024, max: 64 * 1024 * 1024 }),
    payuBodyLimitBytes: read.integer('PAYU_BODY_LIMIT_BYTES', DEFAULT_PAYU_BODY_LIMIT_BYTES, { min: 1024, max: 1024 * 1024, hint: 'PayU callbacks are a few KB' }),
    http: readHttp(read),
    logLevel: read.oneOf('LOG_LEVEL', LOG_LEVELS, 'info'),
    shutdownTimeoutMs: read.integer('SHUTDOWN_TIMEOUT_MS', 10_000, { min: 0, max: 600_000 }),
    heapGrowthPercent: read.integer('HEAP_GROWTH_PERCENT', 60, { min: 0, max: 1000, hint: '0 leaves the growth to V8' }),
    providers: {
      stripe: stripeSecrets ? { secrets: stripeSecrets, toleranceSeconds } : null,
      razorpay: razorpaySecrets ? { secrets: razorpaySecrets } : null,
      payu,
    },
    processing: {
      mode: read.oneOf('PROCESSING_MODE', ['background', 'inline'] as const, 'background'),
      leaseMs: Math.round(read.number('LEASE_SECONDS', 30, { min: 0.1, max: 3600 }) * 1000),
      concurrency: read.integer('WORKER_CONCURRENCY', 256, { min: 1, max: 1024 }),
      maxAttempts: read.integer('MAX_ATTEMPTS', 10, { min: 1, max: 1000 }),
      retryBaseMs,
      retryMaxMs,
      sweepIntervalMs: read.integer('SWEEP_INTERVAL_MS', 1000, { min: 10, max: 3_600_000 }),
      inlineWaitMs: read.integer('INLINE_WAIT_MS', 3000, { min: 0, max: 60_000 }),
      recordTimeoutMs: read.integer('RECORD_TIMEOUT_MS', 2000, { min: 100, max: 60_000, hint: 'providers time out after a few seconds' }),
    },
    redis: readRedis(read),
    operations: readOperations(read),
    outbox: readOutbox(read),
  };
  if (problems.length > 0) throw new ConfigError(problems);
  return { config, variables: [...read.variables.values()] };
}

function readHttp(read: EnvReader): HttpSettings {
  const problemsBefore = read.problemCount();
  const headersTimeoutMs = read.integer('HTTP_HEADERS_TIMEOUT_MS', 10_000, { min: 100, max: 600_000 });
  const requestTimeoutMs = read.integer('HTTP_REQUEST_TIMEOUT_MS', 15_000, { min: 100, max: 3_600_000 });
  // Compared only when both were read: a bad value is reported once, not again as a bad pair.
  if (read.problemCount() === problemsBefore && requestTimeoutMs < headersTimeoutMs) {
    read.problem('HTTP_REQUEST_TIMEOUT_MS must be at least HTTP_HEADERS_TIMEOUT_MS (the headers are part of the request)');
  }
  return { headersTimeoutMs, requestTimeoutMs, idleTimeoutMs: read.integer('HTTP_IDLE_TIMEOUT_MS', 72_000, { min: 100, max: 3_600_000 }) };
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
  const url = read.url('REDIS_URL', ['redis:', 'rediss:'], 'redis://[:password@]127.0.0.1:6379[/db]');
  const stream = read.streamKey('REDIS_STREAM', 'webhook-inbox:events');
  return url ? { url, stream } : null;
}

function readOperations(read: EnvReader): OperationsSettings {
  const archiveCron = read.cron('ARCHIVE_CRON', null);
  const archiveDir = read.string('ARCHIVE_DIR', '') || null;
  if (archiveCron && !archiveDir) read.problem('ARCHIVE_DIR must be set when ARCHIVE_CRON is set (where the archive files go)');
  return {
    alertWebhookUrl: read.url('ALERT_WEBHOOK_URL', ['http:', 'https:'], 'https://hooks.slack.com/services/...') ?? null,
    stuckCheck: {
      cron: read.cron('STUCK_CHECK_CRON', '0 9 * * *'),
      olderThanMs: read.duration('STUCK_CHECK_OLDER_THAN', '30m'),
      outboxOlderThanMs: read.duration('STUCK_CHECK_OUTBOX_OLDER_THAN', '1h'),
    },
    archive: { cron: archiveCron, dir: archiveDir, olderThanMs: read.duration('ARCHIVE_OLDER_THAN', '90d') },
  };
}

function readOutbox(read: EnvReader): OutboxSettings {
  const smtpUrl = read.url('SMTP_URL', ['smtp:', 'smtps:'], 'smtp://user:password@host:587 or smtps://user:password@host:465');
  const from = read.mailAddress('MAIL_FROM');
  const smtpTimeoutMs = read.integer('SMTP_TIMEOUT_MS', 30_000, { min: 100, max: 600_000 });
  const fulfilmentUrl = read.url('FULFILLMENT_URL', ['http:', 'https:'], 'https://fulfilment.example/orders');
  const fulfilmentTimeoutMs = read.integer('FULFILLMENT_TIMEOUT_MS', 10_000, { min: 100, max: 600_000 });
  if (read.isSet('SMTP_URL') && !read.isSet('MAIL_FROM')) read.problem('MAIL_FROM must be set when SMTP_URL is set (the receipts\' sender address)');
  if (read.isSet('MAIL_FROM') && !read.isSet('SMTP_URL')) read.problem('SMTP_URL must be set when MAIL_FROM is set');
  return {
    concurrency: read.integer('OUTBOX_CONCURRENCY', 4, { min: 1, max: 256 }),
    smtp: smtpUrl && from ? { url: smtpUrl, from, timeoutMs: smtpTimeoutMs } : null,
    fulfilment: fulfilmentUrl ? { url: fulfilmentUrl, timeoutMs: fulfilmentTimeoutMs } : null,
  };
}

class EnvReader {
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

  string(name: string, fallback: string): string {
    return this.read(name, fallback) ?? fallback;
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

  duration(name: string, fallback: string): number {
    const raw = this.read(name, fallback) ?? fallback;
    try {
      return parseDuration(raw);
    } catch (error) {
      this.problem(`${name}: ${(error as Error).message}`);
      return parseDuration(fallback);
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

  databaseUrl(name: string): string {
    const raw = this.read(name, DEFAULT_DATABASE_URL, 'url') ?? DEFAULT_DATABASE_URL;
    const problem = databaseUrlProblem(raw);
    if (problem) this.problem(`${name} ${problem}`);
    return raw;
  }
}
