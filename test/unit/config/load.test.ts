import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { SERVICE_DOMAINS, serviceDomains } from '../../../src/service/domains.js';
import { DEFAULT_DATABASE_URL, loadConfig } from '../../../src/config/load.js';
import { readEnvironment } from '../../../src/config/environment.js';
import { ConfigError } from '../../../src/errors.js';
import { EMPTY_DIR, variablesRead } from '../../support/environment.js';

type Env = Record<string, string | undefined>;

/** A Standard Webhooks secret: whsec_ and the base64 of 24 bytes. */
const FORWARD_SECRET = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';

/** The service's configuration: the inbox's with the settings of the domains it may run. */
function configError(env: Env): ConfigError {
  try {
    loadConfig(readEnvironment(env, EMPTY_DIR).variables, { domains: SERVICE_DOMAINS });
  } catch (error) {
    assert.ok(error instanceof ConfigError, `expected a ConfigError, got ${String(error)}`);
    return error;
  }
  assert.fail(`loadConfig(${JSON.stringify(env)}) should have thrown a ConfigError`);
}

describe('loadConfig: defaults and valid values', () => {
  test('an empty environment gives the documented defaults, with every provider unconfigured', () => {
    const config = loadConfig({});
    assert.equal(config.port, 3000);
    assert.equal(config.databaseUrl, DEFAULT_DATABASE_URL);
    assert.equal(DEFAULT_DATABASE_URL, 'sqlite:./data/webhook-inbox.db', 'the embedded store needs no server');
    assert.equal(config.bodyLimitBytes, 1_048_576);
    assert.equal(config.payuBodyLimitBytes, 16_384);
    assert.deepEqual(config.http, { headersTimeoutMs: 10_000, requestTimeoutMs: 15_000, idleTimeoutMs: 72_000 });
    assert.equal(config.migrateOnStart, true);
    assert.equal(config.logLevel, 'info');
    assert.equal(config.processing.mode, 'background');
    assert.equal(config.processing.leaseMs, 30_000);
    assert.equal(config.processing.recordTimeoutMs, 2000);
    assert.deepEqual(config.processing.thread, { enabled: true, nice: 10, yieldUtilisation: 0.7, yieldInFlight: 32 }, "serve's workers in a thread of their own, at nice 10");
    assert.equal(config.processing.yieldConcurrency, 4, 'while they yield, four workers still run');
    assert.equal(config.heapGrowthPercent, 60);
    assert.deepEqual(config.providers, { stripe: null, razorpay: null, payu: null });
    assert.equal(config.redis, null, 'no REDIS_URL: the in-process transport');
  });

  test('WORKER_YIELD_ELU=1 never yields; WORKER_YIELD_IN_FLIGHT=0 leaves it to the loop; WORKER_YIELD_CONCURRENCY sets how many workers run meanwhile', () => {
    const config = loadConfig({ WORKER_YIELD_ELU: '1', WORKER_YIELD_IN_FLIGHT: '0', WORKER_YIELD_CONCURRENCY: '16' });
    assert.equal(config.processing.thread.yieldUtilisation, 1);
    assert.equal(config.processing.thread.yieldInFlight, 0);
    assert.equal(config.processing.yieldConcurrency, 16);
  });

  test('the course platform runs unless COURSE_PLATFORM=false; nothing is forwarded unless FORWARD_URL is set', () => {
    const domainsRun = (env: Env) => serviceDomains(loadConfig(env, { domains: SERVICE_DOMAINS })).map((domain) => domain.name);
    assert.deepEqual(domainsRun({}), ['course-platform']);
    assert.deepEqual(domainsRun({ COURSE_PLATFORM: 'false' }), []);
    assert.equal(loadConfig({}).forward, null);
  });

  test('FORWARD_URL with FORWARD_SECRET (one or several, for a rotation) turns forwarding on', () => {
    const second = `whsec_${Buffer.alloc(64, 7).toString('base64')}`;
    assert.deepEqual(loadConfig({ FORWARD_URL: 'https://payments.internal/webhooks', FORWARD_SECRET: `${FORWARD_SECRET},${second}` }).forward, {
      url: 'https://payments.internal/webhooks',
      secrets: [FORWARD_SECRET, second],
      timeoutMs: 10_000,
      rawEvents: false,
    });
    const raw = loadConfig({ FORWARD_URL: 'http://127.0.0.1:8080/in', FORWARD_SECRET, FORWARD_TIMEOUT_MS: '2500', FORWARD_RAW_EVENTS: 'true' }).forward;
    assert.deepEqual([raw?.timeoutMs, raw?.rawEvents], [2500, true]);
  });

  test('REDIS_URL selects Redis Streams, on the default stream unless REDIS_STREAM names one', () => {
    assert.deepEqual(loadConfig({ REDIS_URL: 'redis://:pw@cache:6379/2' }).redis, { url: 'redis://:pw@cache:6379/2', stream: 'webhook-inbox:events' });
    assert.deepEqual(loadConfig({ REDIS_URL: 'rediss://cache', REDIS_STREAM: 'shop:webhooks' }).redis, { url: 'rediss://cache', stream: 'shop:webhooks' });
  });

  test('DATABASE_URL accepts SQLite files (relative or absolute) and MySQL URLs', () => {
    for (const url of [
      'sqlite:inbox.db',
      'sqlite:./data/inbox.db',
      'sqlite:/var/lib/webhook-inbox/inbox.db',
      'sqlite:///var/lib/inbox.db',
      'mysql://app:pw@db:3306/webhook_inbox',
    ]) {
      assert.equal(loadConfig({ DATABASE_URL: url }).databaseUrl, url);
    }
  });

  test('no MANAGEMENT_PORT: one listener; MANAGEMENT_PORT serves the management routes apart, on 127.0.0.1 unless MANAGEMENT_HOST says', () => {
    assert.equal(loadConfig({}).management, null);
    assert.deepEqual(loadConfig({ MANAGEMENT_PORT: '9090' }).management, { host: '127.0.0.1', port: 9090 });
    assert.deepEqual(loadConfig({ MANAGEMENT_PORT: '9090', MANAGEMENT_HOST: '0.0.0.0' }).management, { host: '0.0.0.0', port: 9090 });
    assert.deepEqual(loadConfig({ PORT: '0', MANAGEMENT_PORT: '0' }).management, { host: '127.0.0.1', port: 0 }, 'two free ports, each chosen as it listens');
  });

  test('HOST takes IP addresses and host names', () => {
    for (const host of ['0.0.0.0', '::', '::1', '127.0.0.1', 'localhost', 'inbox-1.internal.example']) assert.equal(loadConfig({ HOST: host }).host, host);
  });

  test('the Stripe tolerance defaults to 300 s', () => {
    assert.equal(loadConfig({ STRIPE_WEBHOOK_SECRET: 'whsec_a' }).providers.stripe?.toleranceSeconds, 300);
  });

  test('comma-separated secrets are split and trimmed', () => {
    const config = loadConfig({
      STRIPE_WEBHOOK_SECRET: 'whsec_a, whsec_b',
      RAZORPAY_WEBHOOK_SECRET: ' rzp_new ,rzp_old,',
      STRIPE_TOLERANCE_SECONDS: '60',
    });
    assert.deepEqual(config.providers.stripe, { secrets: ['whsec_a', 'whsec_b'], toleranceSeconds: 60 });
    assert.deepEqual(config.providers.razorpay, { secrets: ['rzp_new', 'rzp_old'] });
  });

  test('PayU is configured when both key and salt are set', () => {
    const config = loadConfig({ PAYU_MERCHANT_KEY: 'TstK3y', PAYU_MERCHANT_SALT: 'TestSalt0123456789abcdefGHIJKLmn' });
    assert.deepEqual(config.providers.payu, { merchantKey: 'TstK3y', merchantSalt: 'TestSalt0123456789abcdefGHIJKLmn' });
  });
});

describe('loadConfig: each invalid value is reported by variable name', () => {
  const testedVariables = new Set<string>();

  for (const { env, variable } of [
    { env: { PORT: 'abc' }, variable: 'PORT' },
    { env: { PORT: '70000' }, variable: 'PORT' },
    { env: { HOST: 'not_a_host' }, variable: 'HOST' },
    { env: { HOST: 'http://0.0.0.0' }, variable: 'HOST' },
    { env: { MANAGEMENT_PORT: 'metrics' }, variable: 'MANAGEMENT_PORT' },
    { env: { MANAGEMENT_PORT: '65536' }, variable: 'MANAGEMENT_PORT' },
    { env: { MANAGEMENT_PORT: '3000' }, variable: 'MANAGEMENT_PORT' },
    { env: { PORT: '8080', MANAGEMENT_PORT: '8080' }, variable: 'MANAGEMENT_PORT' },
    // A bad PORT is not compared, so its default does not clash with MANAGEMENT_PORT as well.
    { env: { PORT: 'http', MANAGEMENT_PORT: '3000' }, variable: 'PORT' },
    { env: { MANAGEMENT_HOST: '0.0.0.0' }, variable: 'MANAGEMENT_PORT' },
    { env: { MANAGEMENT_PORT: '9090', MANAGEMENT_HOST: 'not_a_host' }, variable: 'MANAGEMENT_HOST' },
    { env: { DATABASE_URL: 'oracle://x/y' }, variable: 'DATABASE_URL' },
    { env: { DATABASE_URL: 'postgres://host:5432' }, variable: 'DATABASE_URL' },
    { env: { DATABASE_URL: 'not a url' }, variable: 'DATABASE_URL' },
    { env: { DATABASE_URL: 'mysql://host:3306' }, variable: 'DATABASE_URL' },
    { env: { DATABASE_URL: 'sqlite://host/inbox.db' }, variable: 'DATABASE_URL' },
    { env: { DATABASE_URL: 'sqlite::memory:' }, variable: 'DATABASE_URL' },
    { env: { DATABASE_URL: 'sqlite:' }, variable: 'DATABASE_URL' },
    { env: { DATABASE_URL: 'sqlite:./data/' }, variable: 'DATABASE_URL' },
    { env: { DATABASE_URL: 'sqlite:./inbox.db?mode=ro' }, variable: 'DATABASE_URL' },
    { env: { STRIPE_WEBHOOK_SECRET: 'whsec_a', STRIPE_TOLERANCE_SECONDS: '0' }, variable: 'STRIPE_TOLERANCE_SECONDS' },
    { env: { PROCESSING_MODE: 'fast' }, variable: 'PROCESSING_MODE' },
    { env: { LEASE_SECONDS: '-1' }, variable: 'LEASE_SECONDS' },
    { env: { BODY_LIMIT_BYTES: '10' }, variable: 'BODY_LIMIT_BYTES' },
    { env: { PAYU_BODY_LIMIT_BYTES: '2097152' }, variable: 'PAYU_BODY_LIMIT_BYTES' },
    { env: { HTTP_HEADERS_TIMEOUT_MS: '10s' }, variable: 'HTTP_HEADERS_TIMEOUT_MS' },
    { env: { HTTP_REQUEST_TIMEOUT_MS: '0' }, variable: 'HTTP_REQUEST_TIMEOUT_MS' },
    { env: { HTTP_HEADERS_TIMEOUT_MS: '20000', HTTP_REQUEST_TIMEOUT_MS: '10000' }, variable: 'HTTP_REQUEST_TIMEOUT_MS' },
    { env: { HTTP_IDLE_TIMEOUT_MS: '-1' }, variable: 'HTTP_IDLE_TIMEOUT_MS' },
    { env: { MIGRATE_ON_START: 'maybe' }, variable: 'MIGRATE_ON_START' },
    { env: { LOG_LEVEL: 'loud' }, variable: 'LOG_LEVEL' },
    { env: { STRIPE_WEBHOOK_SECRET: ',,' }, variable: 'STRIPE_WEBHOOK_SECRET' },
    { env: { STRIPE_WEBHOOK_SECRET: 'whsec_a whsec_b' }, variable: 'STRIPE_WEBHOOK_SECRET' },
    { env: { STRIPE_WEBHOOK_SECRET: 'sk_live_pasted_the_api_key' }, variable: 'STRIPE_WEBHOOK_SECRET' },
    { env: { STRIPE_WEBHOOK_SECRET: 'whsec_new,old_without_prefix' }, variable: 'STRIPE_WEBHOOK_SECRET' },
    { env: { STRIPE_WEBHOOK_SECRET: 'whsec_' }, variable: 'STRIPE_WEBHOOK_SECRET' },
    { env: { STRIPE_WEBHOOK_SECRET: 'whsec_new, whsec_ ' }, variable: 'STRIPE_WEBHOOK_SECRET' },
    { env: { RAZORPAY_WEBHOOK_SECRET: 'rzp_new, rzp old' }, variable: 'RAZORPAY_WEBHOOK_SECRET' },
    { env: { PAYU_MERCHANT_KEY: 'TstK3y' }, variable: 'PAYU_MERCHANT_SALT' },
    { env: { PAYU_MERCHANT_SALT: 'TestSalt0123456789abcdefGHIJKLmn' }, variable: 'PAYU_MERCHANT_KEY' },
    { env: { RETRY_BASE_SECONDS: '60', RETRY_MAX_SECONDS: '30' }, variable: 'RETRY_MAX_SECONDS' },
    { env: { REDIS_URL: 'localhost:6379' }, variable: 'REDIS_URL' },
    { env: { REDIS_URL: 'http://cache:6379' }, variable: 'REDIS_URL' },
    { env: { REDIS_URL: 'redis://' }, variable: 'REDIS_URL' },
    { env: { RECORD_TIMEOUT_MS: '0' }, variable: 'RECORD_TIMEOUT_MS' },
    { env: { REDIS_STREAM: 'webhook inbox' }, variable: 'REDIS_STREAM' },
    // The bounds are compared only once both were read: no second, misleading problem.
    { env: { RETRY_BASE_SECONDS: 'abc', RETRY_MAX_SECONDS: '5' }, variable: 'RETRY_BASE_SECONDS' },
    { env: { RETRY_MAX_SECONDS: '1e9' }, variable: 'RETRY_MAX_SECONDS' },
    { env: { DB_POOL_SIZE: '0' }, variable: 'DB_POOL_SIZE' },
    { env: { DB_RECORD_CONNECTIONS: '65' }, variable: 'DB_RECORD_CONNECTIONS' },
    { env: { WORKER_CONCURRENCY: '2.5' }, variable: 'WORKER_CONCURRENCY' },
    { env: { MAX_ATTEMPTS: 'many' }, variable: 'MAX_ATTEMPTS' },
    { env: { SWEEP_INTERVAL_MS: '5' }, variable: 'SWEEP_INTERVAL_MS' },
    { env: { WORKER_BATCH_WAIT_MS: '1001' }, variable: 'WORKER_BATCH_WAIT_MS' },
    { env: { WORKER_THREAD: 'yes please' }, variable: 'WORKER_THREAD' },
    { env: { WORKER_NICE: '20' }, variable: 'WORKER_NICE' },
    { env: { WORKER_NICE: '-5' }, variable: 'WORKER_NICE' },
    { env: { WORKER_YIELD_ELU: '1.5' }, variable: 'WORKER_YIELD_ELU' },
    { env: { WORKER_YIELD_ELU: 'busy' }, variable: 'WORKER_YIELD_ELU' },
    { env: { WORKER_YIELD_CONCURRENCY: '0' }, variable: 'WORKER_YIELD_CONCURRENCY' },
    { env: { WORKER_YIELD_IN_FLIGHT: '-1' }, variable: 'WORKER_YIELD_IN_FLIGHT' },
    { env: { WORKER_YIELD_IN_FLIGHT: '2.5' }, variable: 'WORKER_YIELD_IN_FLIGHT' },
    { env: { INLINE_WAIT_MS: '-5' }, variable: 'INLINE_WAIT_MS' },
    { env: { SHUTDOWN_TIMEOUT_MS: '1h' }, variable: 'SHUTDOWN_TIMEOUT_MS' },
    { env: { HEAP_GROWTH_PERCENT: '-10' }, variable: 'HEAP_GROWTH_PERCENT' },
    { env: { PAYU_MERCHANT_KEY: 'Tst K3y', PAYU_MERCHANT_SALT: 'salt' }, variable: 'PAYU_MERCHANT_KEY' },
    { env: { ENV_FILE: 'no-such-file.env' }, variable: 'ENV_FILE' },
    { env: { ALERT_WEBHOOK_URL: 'hooks.slack.com/services/x' }, variable: 'ALERT_WEBHOOK_URL' },
    { env: { STUCK_CHECK_CRON: 'daily' }, variable: 'STUCK_CHECK_CRON' },
    { env: { STUCK_CHECK_OLDER_THAN: '30 minutes' }, variable: 'STUCK_CHECK_OLDER_THAN' },
    { env: { STUCK_CHECK_OUTBOX_OLDER_THAN: '0m' }, variable: 'STUCK_CHECK_OUTBOX_OLDER_THAN' },
    { env: { ARCHIVE_CRON: '61 * * * *', ARCHIVE_DIR: '/var/archive' }, variable: 'ARCHIVE_CRON' },
    { env: { ARCHIVE_CRON: '0 3 * * *' }, variable: 'ARCHIVE_TO' },
    { env: { ARCHIVE_TO: 'gs://bucket/archive' }, variable: 'ARCHIVE_TO' },
    { env: { ARCHIVE_TO: 's3:/bucket/archive' }, variable: 'ARCHIVE_TO' },
    { env: { ARCHIVE_TO: 's3://Bad_Bucket/archive' }, variable: 'ARCHIVE_TO' },
    { env: { ARCHIVE_DIR: 'file:///var/archive' }, variable: 'ARCHIVE_DIR' },
    { env: { ARCHIVE_TO: '/var/archive', ARCHIVE_DIR: '/srv/archive' }, variable: 'ARCHIVE_TO' },
    { env: { ARCHIVE_OLDER_THAN: '0d' }, variable: 'ARCHIVE_OLDER_THAN' },
    { env: { ARCHIVE_ENCRYPTION_KEY: 'k1:c2hvcnQ=' }, variable: 'ARCHIVE_ENCRYPTION_KEY' },
    { env: { AWS_REGION: 'EU West 1' }, variable: 'AWS_REGION' },
    { env: { S3_ENDPOINT: '127.0.0.1:9000' }, variable: 'S3_ENDPOINT' },
    { env: { S3_ENDPOINT: 'ftp://minio.internal' }, variable: 'S3_ENDPOINT' },
    { env: { S3_FORCE_PATH_STYLE: 'path' }, variable: 'S3_FORCE_PATH_STYLE' },
    { env: { ARCHIVE_STORAGE_CLASS: 'standard_ia' }, variable: 'ARCHIVE_STORAGE_CLASS' },
    { env: { ARCHIVE_STORAGE_CLASS: 'DEEP_ARCHIVE' }, variable: 'ARCHIVE_STORAGE_CLASS' },
    { env: { STRIPE_API_KEY: 'whsec_not_an_api_key' }, variable: 'STRIPE_API_KEY' },
    { env: { STRIPE_API_KEY: 'rk_live_' }, variable: 'STRIPE_API_KEY' },
    { env: { STRIPE_API_BASE: 'api.stripe.com' }, variable: 'STRIPE_API_BASE' },
    { env: { STRIPE_API_BASE: 'http://api.stripe.com' }, variable: 'STRIPE_API_BASE' },
    { env: { RAZORPAY_API_BASE: 'http://10.0.0.5:8080' }, variable: 'RAZORPAY_API_BASE' },
    { env: { PAYU_API_BASE: 'http://127.0.0.1.nip.io' }, variable: 'PAYU_API_BASE' },
    { env: { RAZORPAY_KEY_ID: 'rzp_test_id' }, variable: 'RAZORPAY_KEY_ID' },
    { env: { RAZORPAY_KEY_SECRET: 'sec ret', RAZORPAY_KEY_ID: 'rzp_test_id' }, variable: 'RAZORPAY_KEY_SECRET' },
    { env: { RAZORPAY_API_BASE: 'ftp://api.razorpay.com' }, variable: 'RAZORPAY_API_BASE' },
    { env: { PAYU_API_BASE: 'not a url' }, variable: 'PAYU_API_BASE' },
    { env: { RECONCILE_CRON: 'hourly' }, variable: 'RECONCILE_CRON' },
    { env: { RECONCILE_WINDOW: '1 day' }, variable: 'RECONCILE_WINDOW' },
    { env: { RECONCILE_MAX_PAGES: '0' }, variable: 'RECONCILE_MAX_PAGES' },
    { env: { RECONCILE_CONCURRENCY: '1000' }, variable: 'RECONCILE_CONCURRENCY' },
    { env: { RECONCILE_PAYU_PENDING_OLDER_THAN: '0m' }, variable: 'RECONCILE_PAYU_PENDING_OLDER_THAN' },
    { env: { ALERT_CHECK_CRON: 'often' }, variable: 'ALERT_CHECK_CRON' },
    { env: { ALERT_NON_2XX_FOR: '2 hours' }, variable: 'ALERT_NON_2XX_FOR' },
    { env: { ALERT_SIGNATURE_FAILURE_SHARE: '1.5' }, variable: 'ALERT_SIGNATURE_FAILURE_SHARE' },
    { env: { ALERT_SIGNATURE_FAILURE_MIN_COUNT: '0' }, variable: 'ALERT_SIGNATURE_FAILURE_MIN_COUNT' },
    { env: { ALERT_PROVIDER_SILENT_FOR: 'a while' }, variable: 'ALERT_PROVIDER_SILENT_FOR' },
    { env: { SMTP_URL: 'http://mail.example', MAIL_FROM: 'receipts@shop.example' }, variable: 'SMTP_URL' },
    { env: { SMTP_URL: 'smtp://', MAIL_FROM: 'receipts@shop.example' }, variable: 'SMTP_URL' },
    { env: { SMTP_URL: 'smtp://mail.example', MAIL_FROM: 'receipts' }, variable: 'MAIL_FROM' },
    { env: { SMTP_URL: 'smtp://mail.example', MAIL_FROM: 'a@shop.example, b@shop.example' }, variable: 'MAIL_FROM' },
    { env: { SMTP_URL: 'smtp://mail.example' }, variable: 'MAIL_FROM' },
    { env: { MAIL_FROM: 'receipts@shop.example' }, variable: 'SMTP_URL' },
    { env: { SMTP_TIMEOUT_MS: 'soon' }, variable: 'SMTP_TIMEOUT_MS' },
    { env: { FULFILLMENT_URL: 'ftp://fulfil.example' }, variable: 'FULFILLMENT_URL' },
    { env: { FULFILLMENT_TIMEOUT_MS: '0' }, variable: 'FULFILLMENT_TIMEOUT_MS' },
    { env: { OUTBOX_CONCURRENCY: '0' }, variable: 'OUTBOX_CONCURRENCY' },
    { env: { COURSE_PLATFORM: 'maybe' }, variable: 'COURSE_PLATFORM' },
    { env: { COURSE_PLATFORM_PAYU_USER_FIELD: 'udf6' }, variable: 'COURSE_PLATFORM_PAYU_USER_FIELD' },
    { env: { COURSE_PLATFORM_PAYU_COURSE_FIELD: 'productinfo' }, variable: 'COURSE_PLATFORM_PAYU_COURSE_FIELD' },
    { env: { COURSE_PLATFORM_PAYU_USER_FIELD: 'udf2' }, variable: 'COURSE_PLATFORM_PAYU_USER_FIELD' },
    { env: { STRICT_CONFIG: 'maybe' }, variable: 'STRICT_CONFIG' },
    { env: { FORWARD_URL: 'ftp://payments.internal', FORWARD_SECRET: FORWARD_SECRET }, variable: 'FORWARD_URL' },
    { env: { FORWARD_URL: 'https://payments.internal/webhooks' }, variable: 'FORWARD_SECRET' },
    { env: { FORWARD_SECRET: FORWARD_SECRET }, variable: 'FORWARD_URL' },
    { env: { FORWARD_URL: 'https://payments.internal/webhooks', FORWARD_SECRET: 'whsec_dG9vIHNob3J0' }, variable: 'FORWARD_SECRET' },
    { env: { FORWARD_URL: 'https://payments.internal/webhooks', FORWARD_SECRET: 'MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw' }, variable: 'FORWARD_SECRET' },
    { env: { FORWARD_URL: 'https://payments.internal/webhooks', FORWARD_SECRET: 'whsec_not base64!' }, variable: 'FORWARD_SECRET' },
    { env: { FORWARD_TIMEOUT_MS: '0' }, variable: 'FORWARD_TIMEOUT_MS' },
    { env: { FORWARD_RAW_EVENTS: 'sometimes' }, variable: 'FORWARD_RAW_EVENTS' },
    { env: { TRUST_PROXY: '10.0.0.0/99' }, variable: 'TRUST_PROXY' },
    { env: { ADMIN_TOKENS: 'alice:operator:too-short' }, variable: 'ADMIN_TOKENS' },
    { env: { ADMIN_TOKENS: 'alice:root:0123456789abcdef0123456789abcdef' }, variable: 'ADMIN_TOKENS' },
    { env: { ADMIN_AUTH: 'sso' }, variable: 'ADMIN_AUTH' },
    { env: { ADMIN_SESSION_TTL: 'forever' }, variable: 'ADMIN_SESSION_TTL' },
    { env: { ADMIN_SIGN_IN_FAILURES: '0' }, variable: 'ADMIN_SIGN_IN_FAILURES' },
    { env: { ADMIN_SIGN_IN_WINDOW: 'a while' }, variable: 'ADMIN_SIGN_IN_WINDOW' },
    { env: { ADMIN_AUTH: 'proxy', TRUST_PROXY: '10.0.0.1', ADMIN_PROXY_ROLES: '*:viewer' }, variable: 'ADMIN_PROXY_HEADER' },
    { env: { ADMIN_AUTH: 'proxy', TRUST_PROXY: '10.0.0.1', ADMIN_PROXY_HEADER: 'X-Forwarded-Email', ADMIN_PROXY_ROLES: 'alice:admin' }, variable: 'ADMIN_PROXY_ROLES' },
  ]) {
    testedVariables.add(variable);
    test(`${JSON.stringify(env)} -> ConfigError naming ${variable}`, () => {
      const error = configError(env);
      assert.equal(error.problems.length, 1, error.message);
      assert.ok(error.problems[0]?.includes(variable), error.message);
      assert.ok(error.message.includes(variable), error.message);
    });
  }

  test('every variable the configuration reads has a case above (HOST takes any value)', () => {
    const untested = variablesRead().filter((name) => name !== 'HOST' && !testedVariables.has(name));
    assert.deepEqual(untested, [], 'add an invalid value for each of these to the table above');
  });

  test('several bad variables are all named in one error', () => {
    const bad = { PORT: 'abc', LOG_LEVEL: 'loud', PROCESSING_MODE: 'fast', MIGRATE_ON_START: 'maybe', DATABASE_URL: 'not a url' };
    const error = configError(bad);
    assert.equal(error.problems.length, Object.keys(bad).length, error.message);
    for (const variable of Object.keys(bad)) {
      assert.ok(
        error.problems.some((problem) => problem.startsWith(variable)),
        `${variable} is named in ${error.message}`,
      );
    }
  });
});

describe('loadConfig: secret values never reach an error message', () => {
  const CANARY = 'LEAKCANARY';
  for (const env of [
    { STRIPE_WEBHOOK_SECRET: `whsec_${CANARY} ${CANARY}` },
    { STRIPE_WEBHOOK_SECRET: `whsec_${CANARY}`, PORT: 'abc' },
    { RAZORPAY_WEBHOOK_SECRET: `rzp_${CANARY}, rzp ${CANARY}` },
    { PAYU_MERCHANT_KEY: `key_${CANARY}` },
    { PAYU_MERCHANT_SALT: `salt_${CANARY}` },
    { PAYU_MERCHANT_KEY: 'TstK3y', PAYU_MERCHANT_SALT: `salt ${CANARY}` },
    { DATABASE_URL: `mysql://app:${CANARY}@db:3306` },
    { DATABASE_URL: `postgres://app:${CANARY}@db` },
    { REDIS_URL: `http://:${CANARY}@cache:6379` },
    { REDIS_URL: `redis//:${CANARY}@cache` },
    { SMTP_URL: `http://mailer:${CANARY}@mail.example`, MAIL_FROM: 'receipts@shop.example' },
    { SMTP_URL: `smtp://mailer:${CANARY}@`, MAIL_FROM: 'receipts@shop.example' },
    { SMTP_URL: `smtp://mailer:${CANARY}@mail.example` },
    { FORWARD_URL: 'https://payments.internal/webhooks', FORWARD_SECRET: `whsec_${CANARY}` },
    { FORWARD_URL: `https://user:${CANARY}@payments.internal/webhooks` },
    { FORWARD_URL: `ftp://user:${CANARY}@payments.internal`, FORWARD_SECRET: FORWARD_SECRET },
  ]) {
    test(`${Object.keys(env).join(' + ')}: ${JSON.stringify(env)}`, () => {
      const error = configError(env);
      assert.ok(!error.message.includes(CANARY), error.message);
    });
  }
});
