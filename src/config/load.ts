import { isIP } from 'node:net';
import { ConfigError } from '../errors.js';
import { databaseUrlProblem } from './database-url.js';
import { ENV_FILE_VARIABLE, EnvReader, readEnvironment, type ConfigVariable, type Env, type SettingsReader } from './environment.js';
import { readArchiveSettings } from './archive-settings.js';
import type {
  AdminRole,
  AdminSettings,
  AdminToken,
  Config,
  ForwardSettings,
  HttpSettings,
  ManagementSettings,
  OperationsSettings,
  OutboxSettings,
  PayuSettings,
  ProviderAlertSettings,
  ReconcileSettings,
  RedisSettings,
} from './settings.js';
import { unknownVariables, type UnknownVariable } from './unknown-variables.js';

/** The embedded store: runs on a fresh machine with nothing but Node. */
export const DEFAULT_DATABASE_URL = 'sqlite:./data/webhook-inbox.db';
/**
 * Connections that record deliveries (DB_RECORD_CONNECTIONS), each running one group-commit batch at a
 * time: one batch fills while the other commits, and one held up (a lock wait) does not stop the
 * deliveries behind it. On a database nearby, few connections make few large statements, which cost
 * the database and the service less CPU per delivery; across a slow link more of them hide the round
 * trip (docs/performance.md has the measurements).
 */
export const DEFAULT_RECORD_CONNECTIONS = 2;

/**
 * How long a background claim or completion waits for others to share its transaction. At a moderate
 * rate, a batch would otherwise start with the first event and carry it alone, paying the whole
 * transaction's statements for one event; a few milliseconds of lag make batches of several.
 */
const DEFAULT_WORKER_BATCH_WAIT_MS = 20;

/**
 * The workers' thread yields the cores to the acknowledgements when both want them: at nice 10 the
 * kernel gives it about a tenth of the weight of the request thread, and all the time the requests
 * leave.
 */
const DEFAULT_WORKER_NICE = 10;
/**
 * The request thread is overloaded when it is busy and deliveries queue there at once. Busy alone is a
 * heavy load it keeps up with; queueing alone is answers waiting for a distant database, which
 * holding processing back would not bring closer. While the workers yield, four of them still run:
 * processing goes on at a trickle, so an overload that lasts is not one where nothing is processed.
 */
const DEFAULT_WORKER_YIELD_ELU = 0.7;
const DEFAULT_WORKER_YIELD_IN_FLIGHT = 32;
const DEFAULT_WORKER_YIELD_CONCURRENCY = 4;
/**
 * PayU callbacks are a few KB, and a PayU body must be parsed before its hash can be checked: a
 * tight limit bounds what an unsigned request can make the parser do.
 */
export const DEFAULT_PAYU_BODY_LIMIT_BYTES = 16 * 1024;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

/** A domain whose settings are read with the inbox's (a PaymentDomain with a `settings` hook). */
export interface SettingsOwner {
  readonly name: string;
  readonly settings?: (read: SettingsReader) => unknown;
}

export interface ConfigOptions {
  /**
   * The domains whose own settings are read too, into `config.domainSettings` by name: their
   * variables are validated with the rest, and a problem among them is named with the others.
   */
  domains?: readonly SettingsOwner[];
  /** Variables something else refers to (a configuration file's `${VAR}`), never taken for misspellings. */
  referenced?: Iterable<string>;
}

/**
 * Reads and validates the whole configuration from the environment (by default the process's, over
 * its .env file), with the settings of `domains`. Every problem is collected, so one start-up attempt
 * names every bad variable.
 */
export function loadConfig(env: Env = readEnvironment().variables, options: ConfigOptions = {}): Config {
  return readConfig(env, options).config;
}

export interface ConfigReading {
  config: Config;
  /** The variables it was read from, with their defaults. */
  variables: ConfigVariable[];
  /** Variables set that configure nothing but look meant to (a misspelling); refused under STRICT_CONFIG. */
  unknown: UnknownVariable[];
  /** What the configuration leaves at risk, a sentence each, for the start log and `config` (an archive written unencrypted). */
  notices: string[];
}

export const UNENCRYPTED_ARCHIVE = 'ARCHIVE_ENCRYPTION_KEY is not set: archive files are written unencrypted (docs/operations.md#encryption-at-rest)';

/** What `config` leaves at risk that is allowed, a sentence each. */
function noticesOf(config: Config): string[] {
  const { archive } = config.operations;
  return archive.to !== null && archive.keys.length === 0 ? [UNENCRYPTED_ARCHIVE] : [];
}

/** The configuration, the variables it was read from, and the unknown ones. */
export function readConfig(env: Env, { domains = [], referenced = [] }: ConfigOptions = {}): ConfigReading {
  const problems: string[] = [];
  const read = new EnvReader(env, problems);

  const stripeSecrets = read.secretList('STRIPE_WEBHOOK_SECRET');
  if (stripeSecrets?.some((secret) => !secret.startsWith('whsec_'))) {
    problems.push("STRIPE_WEBHOOK_SECRET must be the endpoint's signing secret, which starts with whsec_ (not an API key)");
  } else if (stripeSecrets?.some((secret) => secret === 'whsec_')) {
    problems.push('STRIPE_WEBHOOK_SECRET holds whsec_ with nothing after it; paste the whole signing secret as the Stripe dashboard shows it');
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

  const host = read.host('HOST', '0.0.0.0');
  const problemsBeforePort = problems.length;
  const port = read.integer('PORT', 3000, { min: 0, max: 65_535 });
  const config: Config = {
    host,
    port,
    // Compared with PORT only when PORT was read: a bad value is reported once, not again as a clash.
    management: readManagement(read, problems.length === problemsBeforePort ? port : null),
    databaseUrl: readDatabaseUrl(read),
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
      batchWaitMs: read.integer('WORKER_BATCH_WAIT_MS', DEFAULT_WORKER_BATCH_WAIT_MS, { min: 0, max: 1000, hint: 'it adds to the processing lag of every event' }),
      thread: {
        enabled: read.boolean('WORKER_THREAD', true),
        nice: read.integer('WORKER_NICE', DEFAULT_WORKER_NICE, { min: 0, max: 19 }),
        yieldUtilisation: read.number('WORKER_YIELD_ELU', DEFAULT_WORKER_YIELD_ELU, { min: 0.1, max: 1, hint: '1 never yields' }),
        yieldInFlight: read.integer('WORKER_YIELD_IN_FLIGHT', DEFAULT_WORKER_YIELD_IN_FLIGHT, { min: 0, max: 100_000, hint: '0: the event loop alone decides' }),
      },
      yieldConcurrency: read.integer('WORKER_YIELD_CONCURRENCY', DEFAULT_WORKER_YIELD_CONCURRENCY, { min: 1, max: 1024 }),
      inlineWaitMs: read.integer('INLINE_WAIT_MS', 3000, { min: 0, max: 60_000 }),
      recordTimeoutMs: read.integer('RECORD_TIMEOUT_MS', 2000, { min: 100, max: 60_000, hint: 'providers time out after a few seconds' }),
    },
    redis: readRedis(read),
    operations: readOperations(read, payu),
    outbox: readOutbox(read),
    forward: readForward(read),
    trustProxy: readTrustProxy(read),
    admin: readAdmin(read),
    domainSettings: Object.fromEntries(domains.flatMap((domain) => (domain.settings ? [[domain.name, domain.settings(read)]] : []))),
  };
  const strict = read.boolean('STRICT_CONFIG', false);
  const unknown = unknownVariables(env, [ENV_FILE_VARIABLE, ...read.variables.keys()], referenced);
  // With other problems, a misspelling may be their cause: it is named with them.
  if (strict || problems.length > 0) problems.push(...unknown.map(({ message }) => (strict ? `${message} (STRICT_CONFIG=true refuses to start with it)` : message)));
  if (problems.length > 0) throw new ConfigError(problems);
  return { config, variables: [...read.variables.values()], unknown, notices: noticesOf(config) };
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

function readManagement(read: EnvReader, port: number | null): ManagementSettings | null {
  const managementPort = read.optionalInteger('MANAGEMENT_PORT', { min: 0, max: 65_535, hint: 'the port of /metrics, /readyz and /admin, apart from PORT' });
  const host = read.host('MANAGEMENT_HOST', '127.0.0.1');
  if (read.isSet('MANAGEMENT_HOST') && !read.isSet('MANAGEMENT_PORT')) read.problem('MANAGEMENT_PORT must be set when MANAGEMENT_HOST is set (the port it serves)');
  if (managementPort === undefined) return null;
  // Port 0 twice is two free ports, chosen when each listener starts.
  if (managementPort !== 0 && managementPort === port) {
    read.problem(`MANAGEMENT_PORT must differ from PORT (both are ${port}): the management routes are served apart from the webhooks`);
  }
  return { host, port: managementPort };
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

function readOperations(read: EnvReader, payu: PayuSettings | null): OperationsSettings {
  return {
    alertWebhookUrl: read.url('ALERT_WEBHOOK_URL', ['http:', 'https:'], 'https://hooks.slack.com/services/...') ?? null,
    stuckCheck: {
      cron: read.cron('STUCK_CHECK_CRON', '0 9 * * *'),
      olderThanMs: read.duration('STUCK_CHECK_OLDER_THAN', '30m'),
      outboxOlderThanMs: read.duration('STUCK_CHECK_OUTBOX_OLDER_THAN', '1h'),
    },
    archive: readArchiveSettings(read),
    reconcile: readReconcile(read, payu),
    alerts: readProviderAlerts(read),
  };
}

function readReconcile(read: EnvReader, payu: PayuSettings | null): ReconcileSettings {
  const apiBase = (name: string, fallback: string) => apiBaseUrl(read, name, fallback);
  const stripeKey = read.optionalSecret('STRIPE_API_KEY');
  if (stripeKey && !/^(rk|sk)_/.test(stripeKey)) read.problem('STRIPE_API_KEY must be a Stripe API key (rk_... restricted, read-only, or sk_...), not the webhook secret');
  else if (stripeKey && /^(rk|sk)_(?:(?:live|test)_)?$/.test(stripeKey))
    read.problem('STRIPE_API_KEY holds only the prefix of a key; paste the whole key as the Stripe dashboard shows it');
  const stripeBase = apiBase('STRIPE_API_BASE', 'https://api.stripe.com');
  const keyId = read.optionalSecret('RAZORPAY_KEY_ID');
  const keySecret = read.optionalSecret('RAZORPAY_KEY_SECRET');
  if (read.isSet('RAZORPAY_KEY_ID') !== read.isSet('RAZORPAY_KEY_SECRET')) read.problem('RAZORPAY_KEY_ID and RAZORPAY_KEY_SECRET must be set together');
  const razorpayBase = apiBase('RAZORPAY_API_BASE', 'https://api.razorpay.com');
  const payuBase = apiBase('PAYU_API_BASE', 'https://info.payu.in');
  return {
    apis: {
      stripe: stripeKey ? { apiKey: stripeKey, apiBase: stripeBase } : null,
      razorpay: keyId && keySecret ? { keyId, keySecret, apiBase: razorpayBase } : null,
      payu: payu ? { ...payu, apiBase: payuBase } : null,
    },
    cron: read.cron('RECONCILE_CRON', null),
    windowMs: read.duration('RECONCILE_WINDOW', '24h'),
    maxPages: read.integer('RECONCILE_MAX_PAGES', 1000, { min: 1, max: 100_000 }),
    concurrency: read.integer('RECONCILE_CONCURRENCY', 4, { min: 1, max: 64, hint: 'the providers rate-limit their APIs' }),
    payuPendingOlderThanMs: read.duration('RECONCILE_PAYU_PENDING_OLDER_THAN', '30m'),
  };
}

/**
 * A provider API's address. The API key goes with every request and the answers are trusted, so
 * plain http:// is for a fake on this machine only.
 */
function apiBaseUrl(read: EnvReader, name: string, fallback: string): string {
  const raw = read.url(name, ['http:', 'https:'], fallback);
  if (raw === undefined) return fallback;
  const url = new URL(raw);
  if (url.protocol === 'http:' && !isLoopback(url.hostname)) {
    read.problem(`${name} must be an https:// URL: over http:// the API key would travel in clear (http:// is accepted for a loopback address only: 127.0.0.1, ::1, localhost)`);
    return fallback;
  }
  return raw;
}

/** 127.0.0.0/8, ::1 or localhost; the URL parser has already put an address in its canonical form. */
function isLoopback(hostname: string): boolean {
  const address = hostname.replace(/^\[(.*)\]$/, '$1');
  if (isIP(address) === 4) return address.startsWith('127.');
  if (isIP(address) === 6) return address === '::1';
  return hostname.toLowerCase() === 'localhost';
}

function readProviderAlerts(read: EnvReader): ProviderAlertSettings {
  return {
    cron: read.cron('ALERT_CHECK_CRON', '*/5 * * * *'),
    non2xxForMs: read.duration('ALERT_NON_2XX_FOR', '2h'),
    signatureFailureShare: read.number('ALERT_SIGNATURE_FAILURE_SHARE', 0.5, { min: 0, max: 1 }),
    signatureFailureMinCount: read.integer('ALERT_SIGNATURE_FAILURE_MIN_COUNT', 10, { min: 1, max: 1_000_000 }),
    providerSilentForMs: read.optionalDuration('ALERT_PROVIDER_SILENT_FOR'),
  };
}

function readOutbox(read: EnvReader): OutboxSettings {
  const smtpUrl = read.url('SMTP_URL', ['smtp:', 'smtps:'], 'smtp://user:password@host:587 or smtps://user:password@host:465');
  const smtpTimeoutMs = read.integer('SMTP_TIMEOUT_MS', 30_000, { min: 100, max: 600_000 });
  return {
    concurrency: read.integer('OUTBOX_CONCURRENCY', 4, { min: 1, max: 256 }),
    smtp: smtpUrl ? { url: smtpUrl, timeoutMs: smtpTimeoutMs } : null,
  };
}

/** What the Standard Webhooks specification asks of a secret: 24 to 64 random bytes. */
const FORWARD_SECRET_BYTES = { min: 24, max: 64 };

function readForward(read: EnvReader): ForwardSettings | null {
  const url = read.url('FORWARD_URL', ['http:', 'https:'], 'https://payments.internal.example/webhooks');
  const secrets = read.secretList('FORWARD_SECRET');
  const timeoutMs = read.integer('FORWARD_TIMEOUT_MS', 10_000, { min: 100, max: 600_000 });
  const rawEvents = read.boolean('FORWARD_RAW_EVENTS', false);
  const generate = `node -e "console.log('whsec_' + require('crypto').randomBytes(32).toString('base64'))"`;
  const malformed = secrets?.some((secret) => {
    const encoded = secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : '';
    const bytes = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(encoded) ? Buffer.from(encoded, 'base64').length : 0;
    return bytes < FORWARD_SECRET_BYTES.min || bytes > FORWARD_SECRET_BYTES.max;
  });
  if (malformed) {
    read.problem(
      `FORWARD_SECRET must be whsec_ followed by the base64 of ${FORWARD_SECRET_BYTES.min} to ${FORWARD_SECRET_BYTES.max} random bytes, as Standard Webhooks secrets are (make one with: ${generate})`,
    );
  }
  if (read.isSet('FORWARD_URL') && !read.isSet('FORWARD_SECRET'))
    read.problem(`FORWARD_SECRET must be set when FORWARD_URL is set: every forwarded event is signed (make one with: ${generate})`);
  if (read.isSet('FORWARD_SECRET') && !read.isSet('FORWARD_URL')) read.problem('FORWARD_URL must be set when FORWARD_SECRET is set');
  return url && secrets && !malformed ? { url, secrets, timeoutMs, rawEvents } : null;
}

/** An admin token must be long enough that guessing it is hopeless. */
export const ADMIN_TOKEN_MIN_LENGTH = 32;
const ADMIN_ROLES: readonly AdminRole[] = ['viewer', 'operator'];

function readTrustProxy(read: EnvReader): string[] {
  const raw = read.string('TRUST_PROXY', '');
  const entries = raw
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  const bad = entries.filter((entry) => {
    const [address = '', bits, ...rest] = entry.split('/');
    const family = isIP(address);
    if (family === 0 || rest.length > 0) return true;
    return bits !== undefined && !(/^\d+$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128));
  });
  if (bad.length > 0) read.problem(`TRUST_PROXY must be comma-separated IP addresses or CIDR ranges, e.g. 10.0.0.5,192.168.0.0/16 (not: ${bad.join(', ')})`);
  return bad.length > 0 ? [] : entries;
}

function readAdmin(read: EnvReader): AdminSettings | null {
  const auth = read.oneOf('ADMIN_AUTH', ['tokens', 'proxy'] as const, 'tokens');
  const tokens = readAdminTokens(read);
  const sessionTtlMs = read.duration('ADMIN_SESSION_TTL', '8h');
  const signInLimit = { failures: read.integer('ADMIN_SIGN_IN_FAILURES', 10, { min: 1, max: 1_000_000 }), windowMs: read.duration('ADMIN_SIGN_IN_WINDOW', '15m') };
  const proxyHeader = read.string('ADMIN_PROXY_HEADER', '').toLowerCase() || null;
  const proxyRoles = readProxyRoles(read);
  if (auth === 'proxy') {
    if (!proxyHeader) read.problem('ADMIN_PROXY_HEADER must be set when ADMIN_AUTH=proxy (the header your proxy sets to the user, e.g. X-Forwarded-Email)');
    else if (!/^[a-z0-9-]+$/.test(proxyHeader)) read.problem(`ADMIN_PROXY_HEADER must be a header name (got "${proxyHeader}")`);
    if (!read.isSet('ADMIN_PROXY_ROLES')) read.problem('ADMIN_PROXY_ROLES must be set when ADMIN_AUTH=proxy, e.g. alice@example.com:operator,*:viewer');
    if (!read.isSet('TRUST_PROXY')) read.problem('TRUST_PROXY must be set when ADMIN_AUTH=proxy: the proxy header is believed only from those addresses');
    return { auth, tokens, sessionTtlMs, signInLimit, proxyHeader, proxyRoles };
  }
  return tokens.length > 0 ? { auth, tokens, sessionTtlMs, signInLimit, proxyHeader: null, proxyRoles: [] } : null;
}

function readAdminTokens(read: EnvReader): AdminToken[] {
  const entries = read.secretList('ADMIN_TOKENS') ?? [];
  const tokens: AdminToken[] = [];
  for (const [index, entry] of entries.entries()) {
    const [name = '', role = '', ...rest] = entry.split(':');
    const token = rest.join(':');
    const position = `entry ${index + 1}`;
    if (!/^[\w.@-]{1,64}$/.test(name))
      read.problem(`ADMIN_TOKENS ${position} must be name:role:token with a name of letters, digits and _ . @ - (expected name:viewer|operator:token)`);
    else if (!(ADMIN_ROLES as readonly string[]).includes(role)) read.problem(`ADMIN_TOKENS ${position} (${name}) has role "${role}"; the role must be viewer or operator`);
    else if (token.length < ADMIN_TOKEN_MIN_LENGTH)
      read.problem(`ADMIN_TOKENS ${position} (${name}) needs a token of at least ${ADMIN_TOKEN_MIN_LENGTH} characters (make one with: openssl rand -hex 32)`);
    else if (tokens.some((t) => t.name === name)) read.problem(`ADMIN_TOKENS names ${name} twice; each token needs its own name (it is the actor in the audit log)`);
    else if (tokens.some((t) => t.token === token)) read.problem(`ADMIN_TOKENS ${position} (${name}) repeats another entry's token; each needs its own`);
    else tokens.push({ name, role: role as AdminRole, token });
  }
  return tokens;
}

function readProxyRoles(read: EnvReader): AdminSettings['proxyRoles'] {
  const raw = read.string('ADMIN_PROXY_ROLES', '');
  const roles: AdminSettings['proxyRoles'] = [];
  for (const entry of raw
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e !== '')) {
    const at = entry.lastIndexOf(':');
    const user = entry.slice(0, at);
    const role = entry.slice(at + 1);
    if (at <= 0 || !(ADMIN_ROLES as readonly string[]).includes(role)) read.problem(`ADMIN_PROXY_ROLES entry "${entry}" must be user:viewer or user:operator (user * for anyone)`);
    else roles.push({ user, role: role as AdminRole });
  }
  return roles;
}

function readDatabaseUrl(read: EnvReader): string {
  const raw = read.string('DATABASE_URL', DEFAULT_DATABASE_URL, 'url');
  const problem = databaseUrlProblem(raw);
  if (problem) read.problem(`DATABASE_URL ${problem}`);
  return raw;
}
