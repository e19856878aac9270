import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { promisify } from 'node:util';
import { CLI_ARGS, cli, exitOf } from '../../support/cli.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { killAll, serve, worker } from '../../support/processes.js';

const databases = await createTestDatabases();

/** A misspelled DATABASE_URL: set, and configuring nothing. */
const MISSPELLED = { DATABSE_URL: 'mysql://root@db.example:3306/shop' };

/** The JSON log line whose `msg` starts with `message`, from a process's output. */
function logLine(output: string, message: string): Record<string, unknown> | undefined {
  return output
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .find((line) => typeof line.msg === 'string' && line.msg.startsWith(message));
}

after(killAll);

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`the start log of serve and worker (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    const db = database as TestDatabase;
    after(() => db.drop());

    test('names the store and where it is (credentials left out; a SQLite file by its absolute path), and warns of a misspelled variable', async () => {
      // SQLite as an operator writes it, relative to the working directory: the log gives the whole path.
      const cwd = await mkdtemp(join(tmpdir(), 'wi-start-'));
      const url = backend === 'sqlite' ? 'sqlite:./data/inbox.db' : db.url;
      const where = backend === 'sqlite' ? join(cwd, 'data/inbox.db') : db.url.replace('://root@', '://…@').replace('://postgres@', '://…@');
      try {
        const server = await serve({ DATABASE_URL: url, LOG_LEVEL: 'info', ...MISSPELLED }, [], cwd);
        server.child.kill('SIGTERM');
        assert.equal(await exitOf(server.child), 0, server.child.output());
        const workers = await worker({ DATABASE_URL: backend === 'sqlite' ? `sqlite:${where}` : url, ...MISSPELLED });
        workers.kill('SIGTERM');
        assert.equal(await exitOf(workers), 0, workers.output());
        for (const output of [server.child.output(), workers.output()]) {
          assert.deepEqual(logLine(output, 'store: '), { ...logLine(output, 'store: '), store: backend, database: where, msg: `store: ${backend} at ${where}` }, output);
          assert.deepEqual(
            logLine(output, 'DATABSE_URL'),
            {
              ...logLine(output, 'DATABSE_URL'),
              level: 40,
              variable: 'DATABSE_URL',
              resembles: 'DATABASE_URL',
              msg: 'DATABSE_URL is not a webhook-inbox variable; did you mean DATABASE_URL?',
            },
            output,
          );
        }
      } finally {
        await rm(cwd, { recursive: true, force: true });
      }
    });
  });
}

describe('unknown variables in the commands', () => {
  test('config names them first, and --json lists them under warnings', async () => {
    const [text, json] = await Promise.all([cli(['config'], MISSPELLED), cli(['config', '--json'], MISSPELLED)]);
    assert.equal(text.code, 0, text.output);
    assert.match(text.output, /^# env file: none .*\n# warning: DATABSE_URL is not a webhook-inbox variable; did you mean DATABASE_URL\?\n/);
    assert.equal(json.code, 0, json.output);
    assert.deepEqual((JSON.parse(json.output) as { warnings: unknown }).warnings, [
      { variable: 'DATABSE_URL', resembles: 'DATABASE_URL', message: 'DATABSE_URL is not a webhook-inbox variable; did you mean DATABASE_URL?' },
    ]);
  });

  test('any other command warns on stderr, leaving stdout to its output', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'wi-warn-'));
    try {
      const env = { PATH: process.env.PATH, DATABASE_URL: `sqlite:${join(dir, 'inbox.db')}`, ...MISSPELLED, HTTP_PROXY: 'http://proxy:3128' };
      const { stdout, stderr } = await promisify(execFile)(process.execPath, [...CLI_ARGS, 'migrate', '--json'], { env });
      assert.equal(stderr, 'webhook-inbox: warning: DATABSE_URL is not a webhook-inbox variable; did you mean DATABASE_URL?\n');
      assert.ok((JSON.parse(stdout) as { applied: string[] }).applied.length > 0, stdout);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test('STRICT_CONFIG=true: serve refuses to start (exit code 2), naming each of them', async () => {
    const { code, output } = await cli(['serve'], { STRICT_CONFIG: 'true', ...MISSPELLED, STRIPE_SECRET: 'whsec_x', NO_PROXY: 'localhost' });
    assert.equal(code, 2, output);
    assert.equal(
      output,
      [
        'invalid configuration:',
        '  - DATABSE_URL is not a webhook-inbox variable; did you mean DATABASE_URL? (STRICT_CONFIG=true refuses to start with it)',
        '  - STRIPE_SECRET is not a webhook-inbox variable; did you mean STRIPE_WEBHOOK_SECRET? (STRICT_CONFIG=true refuses to start with it)',
        '',
      ].join('\n'),
    );
  });
});
