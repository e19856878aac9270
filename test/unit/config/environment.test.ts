import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { promisify } from 'node:util';
import { maskedConfig, maskedVariables, maskSecret, maskUrl, variableLines } from '../../../src/config/display.js';
import { SERVICE_DOMAINS } from '../../../src/service/domains.js';
import { loadConfig, readConfig } from '../../../src/config/load.js';
import { readEnvironment } from '../../../src/config/environment.js';
import { ConfigError } from '../../../src/errors.js';
import { CLI_ARGS } from '../../support/cli.js';
import { EMPTY_DIR, variablesRead } from '../../support/environment.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');

/** A fresh directory holding one .env file with `text`. */
function dirWithEnvFile(text: string, name = '.env'): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'wi-envfile-'));
  writeFileSync(path.join(dir, name), text);
  return dir;
}

describe('the .env file', () => {
  test('is read beneath the environment: the real environment wins', () => {
    const dir = dirWithEnvFile('PORT=4000\nLOG_LEVEL=debug\n# a comment\nSTRIPE_WEBHOOK_SECRET="whsec_from_file"\n');
    const { variables, file } = readEnvironment({ PORT: '5000' }, dir);
    assert.equal(file, path.join(dir, '.env'));
    const config = loadConfig(variables);
    assert.equal(config.port, 5000, 'the environment wins');
    assert.equal(config.logLevel, 'debug', 'the file fills in');
    assert.deepEqual(config.providers.stripe?.secrets, ['whsec_from_file']);
  });

  test('a missing default .env is fine', () => {
    assert.deepEqual(readEnvironment({ PORT: '1' }, EMPTY_DIR), { variables: { PORT: '1' }, file: null });
  });

  test('ENV_FILE names another file, relative to the working directory', () => {
    const dir = dirWithEnvFile('PORT=4100\n', 'staging.env');
    const { variables, file } = readEnvironment({ ENV_FILE: 'staging.env' }, dir);
    assert.equal(file, path.join(dir, 'staging.env'));
    assert.equal(loadConfig(variables).port, 4100);
  });

  test('a missing ENV_FILE is an error naming the variable', () => {
    assert.throws(
      () => readEnvironment({ ENV_FILE: 'absent.env' }, EMPTY_DIR),
      (error: unknown) => error instanceof ConfigError && /^ENV_FILE names .*absent\.env, which cannot be read \(ENOENT\)$/.test(error.problems[0] ?? ''),
    );
  });

  test('invalid values from the file are reported like those from the environment', () => {
    const dir = dirWithEnvFile('PORT=eighty\n');
    assert.throws(() => loadConfig(readEnvironment({}, dir).variables), /PORT must be an integer/);
  });
});

describe('documentation of the variables', () => {
  const variables = variablesRead();

  test('the configuration reads the variables this test expects to find', () => {
    assert.ok(variables.includes('DATABASE_URL') && variables.includes('ENV_FILE') && variables.length >= 20, variables.join(', '));
  });

  test('every variable is in .env.example', () => {
    const example = readFileSync(path.join(ROOT, '.env.example'), 'utf8');
    const missing = variables.filter((name) => !new RegExp(`^#? ?${name}=`, 'm').test(example));
    assert.deepEqual(missing, []);
  });

  test('every variable is in the configuration table of docs/configuration.md', () => {
    const reference = readFileSync(path.join(ROOT, 'docs/configuration.md'), 'utf8');
    const missing = variables.filter((name) => !reference.includes(`| \`${name}\` |`));
    assert.deepEqual(missing, []);
  });
});

describe('the effective configuration, masked', () => {
  const CANARY = 'CANARY0123456789';
  const secrets = {
    STRIPE_WEBHOOK_SECRET: `whsec_${CANARY}a,whsec_${CANARY}b`,
    RAZORPAY_WEBHOOK_SECRET: `rzp_${CANARY}`,
    PAYU_MERCHANT_KEY: `K${CANARY}`,
    PAYU_MERCHANT_SALT: `S${CANARY}`,
    DATABASE_URL: `mysql://app:${CANARY}@db.internal:3306/inbox`,
  };

  test('shows every setting, and no secret', () => {
    const { config, variables } = readConfig(secrets, { domains: SERVICE_DOMAINS });
    const masked = maskedConfig(config);
    const lines = variableLines(variables).join('\n');
    const text = JSON.stringify(masked) + JSON.stringify(maskedVariables(variables)) + lines;
    assert.ok(!text.includes(CANARY), text);
    assert.deepEqual((masked as { providers: { stripe: { secrets: string[] } } }).providers.stripe.secrets, ['whsec_…(masked)', 'whsec_…(masked)']);
    assert.match(text, /"databaseUrl":"mysql:\/\/app:…\(masked\)@db\.internal:3306\/inbox"/);
    assert.match(lines, /^LEASE_SECONDS=30 +# default$/m, 'the variable a user sets, in its own unit');
    assert.match(lines, /^STRIPE_WEBHOOK_SECRET=whsec_…\(masked\),whsec_…\(masked\)$/m);
    assert.match(lines, /^DATABASE_URL=mysql:\/\/app:…\(masked\)@db\.internal:3306\/inbox$/m);
    assert.match(lines, /^STUCK_CHECK_CRON="0 9 \* \* \*" +# default$/m, 'quoted as .env needs it');
    assert.match(lines, /^# REDIS_URL= +# not set$/m);
    assert.deepEqual(
      variables.map((variable) => variable.name).sort(),
      variablesRead().filter((name) => name !== 'ENV_FILE'),
      'every variable the configuration reads is shown (ENV_FILE: in the header)',
    );
  });

  test('secrets and URLs', () => {
    assert.equal(maskSecret('whsec_abcdefghijklmnop'), 'whsec_…(masked)');
    assert.equal(maskSecret('TstK3y'), '…(masked)', 'short values keep nothing');
    assert.equal(maskUrl('mysql://root@127.0.0.1:3306/webhook_inbox'), 'mysql://root@127.0.0.1:3306/webhook_inbox');
    assert.equal(maskUrl('redis://:pw%40rd@cache:6379/0'), 'redis://:…(masked)@cache:6379/0');
    assert.equal(maskUrl('https://hooks.example.com/services/T0/B0/secretpath'), 'https://hooks.example.com/…(masked)');
    assert.equal(maskUrl('sqlite:data/webhook-inbox.db'), 'sqlite:data/webhook-inbox.db');
  });

  test('webhook-inbox config prints it, as text and as JSON, with the .env file under the environment', async () => {
    const dir = dirWithEnvFile(`RAZORPAY_WEBHOOK_SECRET=${secrets.RAZORPAY_WEBHOOK_SECRET}\nPORT=4000\n`);
    const run = (args: string[]) =>
      promisify(execFile)(process.execPath, [...CLI_ARGS, ...args], {
        cwd: dir,
        env: { PATH: process.env.PATH, PORT: '4500', STRIPE_WEBHOOK_SECRET: secrets.STRIPE_WEBHOOK_SECRET, DATABASE_URL: secrets.DATABASE_URL },
      });
    const [text, json] = await Promise.all([run(['config']), run(['config', '--json'])]);
    for (const output of [text.stdout, json.stdout]) assert.ok(!output.includes(CANARY), output);
    assert.match(text.stdout, /^# env file: .*\.env \(the environment wins over it\)$/m);
    assert.match(text.stdout, /^PORT=4500$/m);
    assert.match(text.stdout, /^RAZORPAY_WEBHOOK_SECRET=rzp_…\(masked\)$/m);
    const parsed = JSON.parse(json.stdout) as {
      envFile: string;
      config: { port: number; databaseUrl: string };
      variables: Record<string, { value: string | null; isDefault: boolean }>;
    };
    assert.equal(parsed.envFile, path.join(dir, '.env'));
    assert.equal(parsed.config.port, 4500);
    assert.equal(parsed.config.databaseUrl, 'mysql://app:…(masked)@db.internal:3306/inbox');
    assert.deepEqual(parsed.variables.PORT, { value: '4500', isDefault: false });
    assert.deepEqual(parsed.variables.LEASE_SECONDS, { value: '30', isDefault: true });
    assert.deepEqual(parsed.variables.REDIS_URL, { value: null, isDefault: true });
  });
});

describe('the command itself', () => {
  test('--version and -V print the version of package.json', async () => {
    const { version } = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };
    const run = (flag: string) => promisify(execFile)(process.execPath, [...CLI_ARGS, flag], { cwd: EMPTY_DIR, env: { PATH: process.env.PATH } });
    for (const { stdout } of await Promise.all([run('--version'), run('-V')])) assert.equal(stdout, `${version}\n`);
  });
});
