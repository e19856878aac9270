import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { exitOf, runCli } from '../../support/cli.js';
import { createTestDatabase, type TestDatabase } from '../../support/database.js';

/** Longer than any start-up on a busy machine; a command still running then hangs (it is killed). */
const HANG_MS = 120_000;

/** Runs a command that must fail at start: its exit code (null when it hung and was killed) and output. */
async function failedStart(args: string[], env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const child = runCli(args, env);
  const killer = setTimeout(() => child.kill('SIGKILL'), HANG_MS);
  try {
    return { code: await exitOf(child), output: child.output() };
  } finally {
    clearTimeout(killer);
  }
}

const escaped = (text: string) => text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** Exactly one line, naming the variable. */
function assertOneLine(output: string, pattern: RegExp): void {
  assert.equal(output.trimEnd().split('\n').length, 1, output);
  assert.match(output, pattern);
}

const mysql = await createTestDatabase('mysql');
const postgres = await createTestDatabase('postgres');

// Each case is a process start of its own, seconds each: a few run side by side.
describe('a database the service cannot use at start: exit code 1 and one line naming DATABASE_URL', { concurrency: 3 }, () => {
  const COMMANDS = [['serve'], ['worker'], ['migrate'], ['events', 'list'], ['outbox', 'list']];

  describe('MySQL refusing the credentials', { skip: 'skip' in mysql && mysql.skip, concurrency: 3 }, () => {
    const PASSWORD = 'n0t-the-passw0rd';
    after(() => (mysql as TestDatabase).drop());

    for (const command of COMMANDS) {
      test(`${command.join(' ')}: the server's message, the password masked`, async () => {
        const server = new URL((mysql as TestDatabase).url);
        const url = `mysql://nobody:${PASSWORD}@${server.host}/wi_refused`;
        const { code, output } = await failedStart(command, { DATABASE_URL: url });
        assert.equal(code, 1, output);
        assertOneLine(
          output,
          new RegExp(`^webhook-inbox: cannot use DATABASE_URL mysql://nobody:…\\(masked\\)@${server.host.replaceAll('.', '\\.')}/wi_refused: .*Access denied for user 'nobody'`),
        );
        assert.ok(!output.includes(PASSWORD), output);
      });
    }

    test('a password holding @ is masked whole, in the error line as in config', async () => {
      const server = new URL((mysql as TestDatabase).url);
      const url = `mysql://root:p@ssSECRET1@${server.host}/wi_refused`;
      const [started, shown] = await Promise.all([failedStart(['serve'], { DATABASE_URL: url }), failedStart(['config'], { DATABASE_URL: url })]);
      assert.equal(started.code, 1, started.output);
      assertOneLine(started.output, new RegExp(`^webhook-inbox: cannot use DATABASE_URL mysql://root:…\\(masked\\)@${escaped(server.host)}/wi_refused: .*Access denied`));
      assert.equal(shown.code, 0, shown.output);
      assert.match(shown.output, new RegExp(`^DATABASE_URL=mysql://root:…\\(masked\\)@${escaped(server.host)}/wi_refused$`, 'm'));
      for (const { output } of [started, shown]) assert.doesNotMatch(output, /SECRET1/);
    });

    test('with MIGRATE_ON_START=false an operator command says the same when its first query is refused', async () => {
      const server = new URL((mysql as TestDatabase).url);
      const { code, output } = await failedStart(['events', 'list'], { DATABASE_URL: `mysql://nobody:${PASSWORD}@${server.host}/wi_refused`, MIGRATE_ON_START: 'false' });
      assert.equal(code, 1, output);
      assertOneLine(output, /^webhook-inbox: cannot use DATABASE_URL mysql:\/\/nobody:…\(masked\)@.*: .*Access denied for user 'nobody'/);
    });
  });

  test('a SQLite file below a directory that refuses children (/proc): fails at once instead of spinning', async () => {
    const { code, output } = await failedStart(['serve'], { DATABASE_URL: 'sqlite:/proc/nope/inbox.db' });
    assert.equal(code, 1, `exit code ${code} (null: it hung and was killed): ${output}`);
    assertOneLine(output, /^webhook-inbox: cannot use DATABASE_URL sqlite:\/proc\/nope\/inbox\.db: cannot open SQLite database \/proc\/nope\/inbox\.db: ENOENT/);
  });

  describe('PostgreSQL refusing the URL: each part wrong in turn, the password masked', { skip: 'skip' in postgres && postgres.skip, concurrency: 3 }, () => {
    const PASSWORD = 'n0t-the-passw0rd';
    after(() => (postgres as TestDatabase).drop());
    const server = () => new URL((postgres as TestDatabase).url);
    const cases: Array<{ part: string; url: () => string; said: string }> = [
      { part: 'an unknown user (and its password)', url: () => `postgres://nobody:${PASSWORD}@${server().host}/wi_refused`, said: 'role "nobody" does not exist' },
      { part: 'a port nothing listens on', url: () => `postgres://postgres:${PASSWORD}@127.0.0.1:1/wi_refused`, said: 'ECONNREFUSED' },
      { part: 'a host that does not resolve', url: () => `postgresql://postgres:${PASSWORD}@no-such-host.invalid:5432/wi_refused`, said: 'ENOTFOUND' },
      { part: 'a database that refuses connections', url: () => `postgres://postgres:${PASSWORD}@${server().host}/template0`, said: 'not currently accepting connections' },
    ];
    test('a password in the query (?password=, which node-postgres reads) is masked, in the error line as in config', async () => {
      const url = `postgres://postgres@${server().hostname}:1/wi_refused?password=SECRET4`;
      const [started, shown] = await Promise.all([failedStart(['serve'], { DATABASE_URL: url }), failedStart(['config'], { DATABASE_URL: url })]);
      assert.equal(started.code, 1, started.output);
      assertOneLine(started.output, new RegExp(`^webhook-inbox: cannot use DATABASE_URL ${escaped(url.replace('SECRET4', '…(masked)'))}: .*ECONNREFUSED`));
      assert.match(shown.output, new RegExp(`^DATABASE_URL=${escaped(url.replace('SECRET4', '…(masked)'))}$`, 'm'));
      for (const { output } of [started, shown]) assert.doesNotMatch(output, /SECRET4/);
    });

    for (const { part, url, said } of cases) {
      test(`${part}: serve fails at start naming DATABASE_URL`, async () => {
        const { code, output } = await failedStart(['serve'], { DATABASE_URL: url() });
        assert.equal(code, 1, output);
        const masked = url().replace(PASSWORD, '…(masked)');
        assertOneLine(output, new RegExp(`^webhook-inbox: cannot use DATABASE_URL ${escaped(masked)}: .*${escaped(said)}`));
        assert.ok(!output.includes(PASSWORD), output);
      });
    }
  });
});
