import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cli } from '../../support/cli.js';
import { createTestDatabases, inspectDatabase, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';

const databases = await createTestDatabases();

/** Every command that only reads the database, as an operator types it. */
const READ_ONLY_COMMANDS = [
  ['events', 'list'],
  ['events', 'show', 'evt_none'],
  ['payments', 'list'],
  ['payments', 'show', 'stripe', 'pi_none'],
  ['outbox', 'list'],
  ['stuck'],
  ['replay', '--status', 'failed', '--dry-run'],
  ['reconcile', '--history'],
];

/** The course platform's tables that a database migrated without it has, of `names`. */
async function coursePlatformTables(url: string): Promise<string[]> {
  const db = inspectDatabase(url, 1);
  try {
    return (await db.introspection.getTables())
      .map((table) => table.name)
      .filter((name) => name === 'orders' || name === 'enrollments')
      .sort();
  } finally {
    await db.destroy();
  }
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`commands that only read never change the schema (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    // Each is a process start of its own: every command on one store, the mechanism on the others.
    const commands = backend === 'sqlite' ? READ_ONLY_COMMANDS : READ_ONLY_COMMANDS.filter(([name]) => name === 'events' || name === 'stuck');
    let db: TestDatabase;

    before(async () => {
      db = database as TestDatabase;
      const migrate = await cli(['migrate'], { DATABASE_URL: db.url, COURSE_PLATFORM: 'false' });
      assert.equal(migrate.code, 0, migrate.output);
    });
    after(() => db?.drop());

    test('with migrations pending, each exits 1 naming them and `webhook-inbox migrate`, and creates no table', async () => {
      const runs = await Promise.all(commands.map((args) => cli(args, { DATABASE_URL: db.url })));
      for (const [index, { code, output }] of runs.entries()) {
        const command = commands[index]!.join(' ');
        assert.equal(code, 1, `${command}: ${output}`);
        assert.match(
          output,
          /^webhook-inbox: the database is not up to date: migration course-platform\/0014_orders_and_enrollments not applied; this command only reads and never changes the schema: run `webhook-inbox migrate` first$/m,
          command,
        );
      }
      assert.deepEqual(await coursePlatformTables(db.url), []);
    });

    test('on a schema up to date for the domains in use (COURSE_PLATFORM=false), they run', async () => {
      const [list, stuck] = await Promise.all([
        cli(['events', 'list'], { DATABASE_URL: db.url, COURSE_PLATFORM: 'false' }),
        cli(['stuck'], { DATABASE_URL: db.url, COURSE_PLATFORM: 'false' }),
      ]);
      assert.equal(list.code, 0, list.output);
      assert.match(list.output, /^no events match$/m);
      assert.equal(stuck.code, 0, stuck.output);
      assert.deepEqual(await coursePlatformTables(db.url), []);
    });

    test('a command that writes still applies pending migrations first (MIGRATE_ON_START)', async () => {
      const unmigrated = await cli(['outbox', 'retry', '--status', 'failed'], { DATABASE_URL: db.url, MIGRATE_ON_START: 'false' });
      assert.equal(unmigrated.code, 0, unmigrated.output);
      assert.deepEqual(await coursePlatformTables(db.url), [], 'MIGRATE_ON_START=false: not migrated');
      const retry = await cli(['outbox', 'retry', '--status', 'failed'], { DATABASE_URL: db.url });
      assert.equal(retry.code, 0, retry.output);
      assert.match(retry.output, /^0 failed rows are pending again$/m);
      assert.deepEqual(await coursePlatformTables(db.url), ['enrollments', 'orders']);
    });
  });
}

test('on a SQLite file that does not exist, a command that only reads exits 1 naming the file, and creates none', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'wi-read-only-'));
  try {
    const file = join(dir, 'mistyped.db');
    const { code, output } = await cli(['events', 'list'], { DATABASE_URL: `sqlite:${file}` });
    assert.equal(code, 1, output);
    assert.ok(output.includes(`no database at ${file}`), output);
    assert.equal(existsSync(file), false, 'no empty file left behind');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
