import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Command } from 'commander';
import { registerOutboxCommand } from '../../../src/cli/commands/outbox.js';
import { systemClock } from '../../../src/clock.js';
import { coursePlatform } from '../../../src/course-platform/course-platform.js';
import { composeDomains } from '../../../src/extension/compose-domains.js';
import { OutboxStore } from '../../../src/outbox/outbox-store.js';
import { openStore } from '../../../src/store/open-store.js';
import { toDbTime, type OutboxStatus } from '../../../src/db/schema.js';
import type { KyselyInboxStore } from '../../../src/store/kysely-store.js';
import { cli } from '../../support/cli.js';
import { createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { testConfig } from '../../support/harness.js';

const databases = await createTestDatabases();

test('webhook-inbox outbox retry needs exactly one of an id or --status (usage error, exit 2)', async () => {
  const { code, output } = await cli(['outbox', 'retry'], {});
  assert.equal(code, 2);
  assert.match(output, /give either a row id or --status failed\|skipped/);
});

/** The command module in-process (a process start costs seconds): what it prints, or its error. */
async function outboxCommand(databaseUrl: string, ...args: string[]): Promise<string> {
  const lines: string[] = [];
  const program = new Command().exitOverride().configureOutput({ writeErr: () => undefined });
  registerOutboxCommand(
    program,
    // The service's configuration: the course platform finds its rows of a payment by their keys.
    () => testConfig(databaseUrl),
    (line) => lines.push(line),
  );
  await program.parseAsync(['outbox', ...args], { from: 'user' });
  return lines.join('\n');
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`webhook-inbox outbox (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let store: KyselyInboxStore;
    let outbox: OutboxStore;
    const ids: Record<string, number> = {};
    const run = (...args: string[]) => outboxCommand(db.url, ...args);

    /** A row finished the way a dispatcher would have left it. */
    async function row(key: string, status: OutboxStatus, detail: string): Promise<void> {
      const now = toDbTime(systemClock.now());
      await store.db
        .insertInto('outbox')
        .values({ idempotency_key: key, kind: 'fulfilment', payload: '{}', status: 'pending', attempts: 0, next_attempt_at: now, created_at: now })
        .execute();
      const { lease } = (await outbox.claim((await outbox.dueIds(10))[0]!, 'test', 30_000))!;
      if (status === 'failed') await outbox.fail(lease, detail, null);
      else await outbox.finish(lease, status as 'sent' | 'skipped', detail);
      ids[status] = lease.id;
    }

    before(async () => {
      db = database as TestDatabase;
      // The tables of the inbox and the course platform, as the service migrates them: `outbox list` only reads, so it would refuse pending ones.
      store = openStore(db.url, { poolSize: 1, clock: systemClock, migrations: composeDomains(testConfig(db.url), [coursePlatform]).migrations });
      await store.migrate();
      outbox = new OutboxStore(store.db, systemClock);
      await row('fulfilment:stripe:pi_sent', 'sent', 'HTTP 200');
      await row('fulfilment:stripe:pi_failed', 'failed', 'HTTP 422: {"error":"unknown course"}');
      await row('fulfilment:stripe:pi_skipped', 'skipped', 'skipped: FULFILLMENT_URL is not set');
    });
    after(async () => {
      await store?.close();
      await db?.drop();
    });

    test('list --json shows every row, newest first, with status, attempts and the recorded response', async () => {
      const entries = JSON.parse(await run('list', '--json')) as Array<{ idempotencyKey: string; status: string; attempts: number; lastError: string | null }>;
      assert.deepEqual(
        entries.map((e) => [e.idempotencyKey, e.status, e.attempts]),
        [
          ['fulfilment:stripe:pi_skipped', 'skipped', 1],
          ['fulfilment:stripe:pi_failed', 'failed', 1],
          ['fulfilment:stripe:pi_sent', 'sent', 1],
        ],
      );
      assert.equal(entries[1]!.lastError, 'HTTP 422: {"error":"unknown course"}');
      assert.equal(await run('list', '--status', 'sending'), 'no sending outbox rows');
    });

    test('retry of a sent or unknown row is refused; a bad --status is a usage error', async () => {
      await assert.rejects(run('retry', String(ids.sent)), { message: `outbox row ${ids.sent} is sent; only failed or skipped rows can be retried` });
      await assert.rejects(run('retry', '999999'), { message: 'no outbox row 999999' });
      await assert.rejects(run('retry', '--status', 'sent'), { code: 'commander.invalidArgument' });
      await assert.rejects(run('retry', 'abc'), { code: 'commander.invalidArgument' });
      assert.equal((await outbox.find(ids.sent!))?.status, 'sent');
    });

    test('retry <id> and retry --status make failed and skipped rows due again; list --status shows a table, one line per row', async () => {
      assert.equal(await run('retry', String(ids.failed)), `outbox row ${ids.failed} is pending again`);
      const entry = await outbox.find(ids.failed!);
      assert.deepEqual([entry?.status, entry?.attempts], ['pending', 0]);
      assert.ok(entry!.nextAttemptAt! <= new Date());
      assert.equal(await run('retry', '--status', 'skipped'), '1 skipped rows are pending again');
      assert.equal(await run('retry', '--status', 'failed', '--json'), '{"retried":0}');

      const lines = (await run('list', '--status', 'pending')).split('\n');
      assert.equal(lines.length, 3);
      assert.match(lines[0]!, /^ID +STATUS +KIND +KEY +ATTEMPTS +WRITTEN \(UTC\) +SENT \/ NEXT ATTEMPT +LAST ERROR \/ OUTCOME$/);
      const time = '\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d\\.\\d{3}';
      assert.match(lines[1]!, new RegExp(`^${ids.skipped} +pending +fulfilment +fulfilment:stripe:pi_skipped +0 +${time} +${time} +skipped: FULFILLMENT_URL is not set$`));
      assert.match(lines[2]!, /HTTP 422: \{"error":"unknown course"\}$/);
    });

    test('list filters like the other listings: --payment (with or without --provider), --provider, --kind, --since/--until, --limit', async () => {
      const keysOf = async (...args: string[]) => (JSON.parse(await run('list', '--json', ...args)) as Array<{ idempotencyKey: string }>).map((e) => e.idempotencyKey);
      await store.db
        .insertInto('outbox')
        .values({ idempotency_key: 'receipt:razorpay:pay_other', kind: 'receipt_email', payload: '{}', status: 'sent', attempts: 1, created_at: toDbTime(systemClock.now()) })
        .execute();
      assert.deepEqual(await keysOf('--payment', 'pi_failed'), ['fulfilment:stripe:pi_failed']);
      assert.deepEqual(await keysOf('--payment', 'pi_failed', '--provider', 'stripe'), ['fulfilment:stripe:pi_failed']);
      assert.deepEqual(await keysOf('--payment', 'pi_failed', '--provider', 'razorpay'), []);
      assert.deepEqual(await keysOf('--provider', 'razorpay'), ['receipt:razorpay:pay_other']);
      assert.deepEqual(await keysOf('--kind', 'receipt_email'), ['receipt:razorpay:pay_other']);
      assert.deepEqual(await keysOf('--until', '1h'), []);
      assert.equal((await keysOf('--since', '1h')).length, 4);
      assert.deepEqual(await keysOf('--limit', '1'), ['receipt:razorpay:pay_other'], 'newest first');
      assert.match(await run('list', '--limit', '1'), /\n\.\.\. more rows match; raise --limit or narrow the filter$/);
      assert.equal(await run('list', '--payment', 'pi_nothing'), 'no outbox rows match');
    });
  });
}
