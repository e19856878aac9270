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

/** Exactly one line, naming the variable. */
function assertOneLine(output: string, pattern: RegExp): void {
  assert.equal(output.trimEnd().split('\n').length, 1, output);
  assert.match(output, pattern);
}

const mysql = await createTestDatabase('mysql');

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

  test('a PostgreSQL URL is a configuration error naming DATABASE_URL (exit code 2), its password never shown', async () => {
    for (const url of ['postgres://app:pgsecret@127.0.0.1:5432/inbox', 'postgresql://app:pgsecret@127.0.0.1/inbox']) {
      const { code, output } = await failedStart(['serve'], { DATABASE_URL: url });
      assert.equal(code, 2, output);
      assert.match(output, /DATABASE_URL names a PostgreSQL database, which is not supported: use SQLite or MySQL\/MariaDB/);
      assert.ok(!output.includes('pgsecret'), output);
    }
  });
});
