import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { SERVICE_DOMAINS } from '../../../src/service/domains.js';
import { readConfig } from '../../../src/config/load.js';
import { editDistance, unknownVariables } from '../../../src/config/unknown-variables.js';
import { ConfigError } from '../../../src/errors.js';
import { variablesRead } from '../../support/environment.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const OURS = variablesRead();

/** Each unknown variable of `env` with the variable of ours it is taken for. */
const resemblances = (env: Record<string, string>, referenced: string[] = []) => unknownVariables(env, OURS, referenced).map(({ variable, resembles }) => [variable, resembles]);

describe('variables that configure nothing but look meant to', () => {
  test('the edit distance counts a swap of neighbours as one edit', () => {
    assert.equal(editDistance('DATABASE_URL', 'DATABASE_URL'), 0);
    assert.equal(editDistance('DATABSE_URL', 'DATABASE_URL'), 1);
    assert.equal(editDistance('PROT', 'PORT'), 1);
    assert.equal(editDistance('LAEES_SECONDS', 'LEASE_SECONDS'), 2);
    assert.equal(editDistance('', 'PORT'), 4);
  });

  test('misspellings name the variable they resemble', () => {
    assert.deepEqual(
      resemblances({
        DATABSE_URL: 'mysql://db/inbox',
        STRIPE_WEBHOOK_SECERT: 'whsec_x',
        LOG_LEVL: 'debug',
        PROT: '8080',
        database_url: 'sqlite:inbox.db',
        MIGRATE_ON_STRAT: 'false',
      }),
      [
        ['database_url', 'DATABASE_URL'],
        ['DATABSE_URL', 'DATABASE_URL'],
        ['LOG_LEVL', 'LOG_LEVEL'],
        ['MIGRATE_ON_STRAT', 'MIGRATE_ON_START'],
        ['PROT', 'PORT'],
        ['STRIPE_WEBHOOK_SECERT', 'STRIPE_WEBHOOK_SECRET'],
      ],
    );
  });

  test('a variable with one of our prefixes names the closest variable of that family', () => {
    assert.deepEqual(resemblances({ STRIPE_SECRET: 'whsec_x', DATABASE_HOST: 'db', REDIS_HOST: 'cache', ADMIN_PASSWORD: 'x', RAZORPAY_SECRET: 'x' }), [
      ['ADMIN_PASSWORD', 'ADMIN_AUTH'],
      ['DATABASE_HOST', 'DATABASE_URL'],
      ['RAZORPAY_SECRET', 'RAZORPAY_KEY_SECRET'],
      ['REDIS_HOST', 'REDIS_URL'],
      ['STRIPE_SECRET', 'STRIPE_WEBHOOK_SECRET'],
    ]);
  });

  test('short names allow one edit only, and unrelated variables are left alone', () => {
    assert.deepEqual(resemblances({ PATH_INFO: '/', HOSTS: 'a,b', POTS: '1', MY_APP_SETTING: 'x', GREETING: 'hello', FOO: 'bar' }), [['HOSTS', 'HOST']]);
  });

  test('standard variables are not ours to judge, in either case', () => {
    const standard = {
      PATH: '/usr/bin',
      HOME: '/root',
      HOSTNAME: 'box',
      HTTP_PROXY: 'http://proxy:3128',
      https_proxy: 'http://proxy:3128',
      NO_PROXY: 'localhost',
      no_proxy: 'localhost',
      NODE_OPTIONS: '--max-old-space-size=512',
      NODE_ENV: 'production',
      npm_config_cache: '/tmp/npm',
      npm_lifecycle_event: 'start',
      LC_ALL: 'C.UTF-8',
      INVOCATION_ID: 'abc',
      LISTEN_FDS: '1',
      CREDENTIALS_DIRECTORY: '/run/credentials/webhook-inbox.service',
    };
    assert.deepEqual(resemblances(standard), []);
  });

  test('Kubernetes service links are not ours to judge; a REDIS_PORT set by hand is', () => {
    const links = {
      REDIS_PORT: 'tcp://10.0.0.11:6379',
      REDIS_PORT_6379_TCP: 'tcp://10.0.0.11:6379',
      REDIS_PORT_6379_TCP_ADDR: '10.0.0.11',
      REDIS_PORT_6379_TCP_PORT: '6379',
      REDIS_PORT_6379_TCP_PROTO: 'tcp',
      REDIS_SERVICE_HOST: '10.0.0.11',
      REDIS_SERVICE_PORT: '6379',
      REDIS_SERVICE_PORT_REDIS: '6379',
      STRIPE_MOCK_SERVICE_HOST: '10.0.0.12',
      WEBHOOK_INBOX_PORT_3000_TCP: 'tcp://10.0.0.13:3000',
      KUBERNETES_SERVICE_HOST: '10.0.0.1',
    };
    assert.deepEqual(resemblances(links), []);
    assert.deepEqual(resemblances({ REDIS_PORT: '6379' }), [['REDIS_PORT', 'REDIS_URL']]);
  });

  test('variables that something else refers to (a configuration file) are meant to be there', () => {
    assert.deepEqual(resemblances({ STRIPE_SECRET_FROM_VAULT: 'x' }), [['STRIPE_SECRET_FROM_VAULT', 'STRIPE_WEBHOOK_SECRET']]);
    assert.deepEqual(resemblances({ STRIPE_SECRET_FROM_VAULT: 'x' }, ['STRIPE_SECRET_FROM_VAULT']), []);
  });

  test("this project's test and benchmark variables are not ours to judge", () => {
    const names = new Set<string>(['TEST_MYSQL_URL', 'TEST_POSTGRES_URL', 'TEST_REDIS_URL', 'REQUIRE_SERVICES']);
    // Every variable the tests, benchmarks and examples read, so a new one is covered by itself.
    const sources = (dir: string): string[] =>
      readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' }).filter((file) => /\.(ts|mjs)$/.test(file) && !file.includes('node_modules'));
    for (const dir of ['test', 'bench', 'chaos', 'examples']) {
      for (const file of sources(dir)) {
        for (const [, name] of readFileSync(path.join(ROOT, dir, file), 'utf8').matchAll(/process\.env\.([A-Z][A-Z0-9_]*)/g)) names.add(name!);
      }
    }
    assert.ok(names.has('ADMIN_SCREENSHOTS') && names.has('BENCH_DATABASE_URL'), [...names].join(', '));
    const theirs = [...names].filter((name) => !OURS.includes(name));
    assert.deepEqual(resemblances(Object.fromEntries(theirs.map((name) => [name, 'x']))), []);
  });

  test('no variable the configuration reads is unknown', () => {
    const { unknown } = readConfig(Object.fromEntries(OURS.map((name) => [name, ''])), { domains: SERVICE_DOMAINS });
    assert.deepEqual(unknown, []);
  });
});

describe('STRICT_CONFIG', () => {
  test('off (the default): the configuration loads, and names the unknown variables', () => {
    const { config, unknown } = readConfig({ DATABSE_URL: 'mysql://db/inbox' });
    assert.equal(config.databaseUrl, 'sqlite:./data/webhook-inbox.db');
    assert.deepEqual(unknown, [{ variable: 'DATABSE_URL', resembles: 'DATABASE_URL', message: 'DATABSE_URL is not a webhook-inbox variable; did you mean DATABASE_URL?' }]);
  });

  test('true: each unknown variable is a problem naming it and the variable it resembles', () => {
    assert.throws(
      () => readConfig({ STRICT_CONFIG: 'true', DATABSE_URL: 'mysql://db/inbox', LOG_LEVL: 'debug', HTTP_PROXY: 'http://proxy:3128' }),
      (error: unknown) => {
        assert.ok(error instanceof ConfigError);
        assert.deepEqual(error.problems, [
          'DATABSE_URL is not a webhook-inbox variable; did you mean DATABASE_URL? (STRICT_CONFIG=true refuses to start with it)',
          'LOG_LEVL is not a webhook-inbox variable; did you mean LOG_LEVEL? (STRICT_CONFIG=true refuses to start with it)',
        ]);
        return true;
      },
    );
    assert.doesNotThrow(() => readConfig({ STRICT_CONFIG: 'true', HTTP_PROXY: 'http://proxy:3128' }));
  });

  test('when the configuration is invalid anyway, a misspelling is named with the problems: it may be their cause', () => {
    assert.throws(
      () => readConfig({ SMTP_URL: 'smtp://mail.example', MAIL_FORM: 'receipts@shop.example' }, { domains: SERVICE_DOMAINS }),
      (error: unknown) =>
        error instanceof ConfigError &&
        error.problems.some((problem) => problem.startsWith('MAIL_FROM must be set')) &&
        error.problems.some((problem) => problem.startsWith('MAIL_FORM is not a webhook-inbox variable; did you mean MAIL_FROM?')),
    );
  });
});
