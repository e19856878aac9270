import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { backendFor } from '../../../src/db/open-database.js';
import { toDbTime } from '../../../src/db/schema.js';
import { copyInstallation, type CopyReport } from '../../../src/ops/copy/copy-installation.js';
import { cli } from '../../support/cli.js';
import { createTestDatabase, inspectDatabase, type TestDatabase } from '../../support/database.js';
import { seedEvents } from '../../support/events.js';
import { Harness, serviceInbox, testConfig } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const sqlite = await createTestDatabase('sqlite');
const postgres = await createTestDatabase('postgres');
const mysql = await createTestDatabase('mysql');
const mysqlAgain = await createTestDatabase('mysql');
const skip = [postgres, mysql, mysqlAgain].find((db): db is { skip: string } => 'skip' in db)?.skip;

/** The report a `copy --json` printed (progress lines on stderr come before it). */
function reportOf(output: string): CopyReport {
  return JSON.parse(output.slice(output.indexOf('\n{') + 1)) as CopyReport;
}

const checksums = (report: CopyReport) => Object.fromEntries(report.tables.map((t) => [t.table, t.sourceChecksum]));

describe('webhook-inbox copy: SQLite -> PostgreSQL -> MySQL', { skip }, () => {
  const [from, viaPostgres, toMysql, other] = [sqlite, postgres, mysql, mysqlAgain] as TestDatabase[];
  let sourceReport: CopyReport;
  const EVENTS = 12;

  before(async () => {
    const harness = await Harness.start(from!.url);
    try {
      for (let n = 0; n < EVENTS; n++) {
        const answer = await harness.post(stripeDelivery(stripePaymentEvent(`evt_copy_${n}`, 'payment_intent.succeeded', `pi_copy_${n}`, { userId: `u${n}` })));
        assert.equal(answer.status, 200);
      }
      await harness.waitUntilProcessed(EVENTS, 30_000);
      // Ids that only a byte-for-byte comparison tells apart, and a payload of every kind of character.
      await seedEvents(harness.db, [
        { event_id: 'evt_A', payload: JSON.stringify({ note: 'é😀 "quoted" \\ \u0000 escaped' }) },
        { event_id: 'evt_a' },
        { event_id: 'evt_日本', payload: 'x'.repeat(70_000) },
      ]);
      const now = toDbTime(new Date());
      await harness.db
        .insertInto('archived_event_keys')
        .values({ provider: 'stripe', event_id: 'evt_archived', event_row_id: 9999, event_created_at: now, archive_file: 'a.jsonl.gz', archived_at: now })
        .execute();
      await harness.db
        .insertInto('event_replays')
        .values({
          event_row_id: 1,
          provider: 'stripe',
          event_id: 'evt_copy_0',
          actor: 'ops',
          reason: 'test',
          previous_status: 'processed',
          previous_attempts: 1,
          // The processing it replaced: an event's history, which the copy carries.
          previous_outcome: 'applied: payment pi_copy_0 captured',
          previous_processed_at: now,
          previous_claimed_at: now,
          previous_owner: 'host:1:abcd',
          made_due_at: now,
          requested_at: now,
        })
        .execute();
      await harness.db
        .insertInto('event_attempts')
        .values({ event_row_id: 1, attempt: 1, owner: 'host:1:abcd', outcome: 'failed', error: 'Error: <b>é😀</b>', started_at: now, ended_at: now })
        .execute();
      await harness.db
        .insertInto('bulk_replays')
        .values({
          job_key: 'copy-job',
          actor: 'ops',
          reason: 'test',
          filter: '{"status":"failed"}',
          total: 2,
          done: 2,
          processed: 1,
          failed: 1,
          skipped: 0,
          state: 'finished',
          error: null,
          cancel_requested: 0,
          runner: 'host:1',
          heartbeat_at: now,
          started_at: now,
          finished_at: now,
        })
        .execute();
    } finally {
      await harness.close();
    }
  });
  after(async () => {
    for (const db of [from, viaPostgres, toMysql, other]) await db?.drop();
  });

  test('round trip: every table copied with the same counts and checksums at each hop', async () => {
    const first = await cli(['copy', '--from', from!.url, '--to', viaPostgres!.url, '--json', '--batch-size', '5'], {});
    assert.equal(first.code, 0, first.output);
    sourceReport = reportOf(first.output);
    const second = await cli(['copy', '--from', viaPostgres!.url, '--to', toMysql!.url, '--json'], {});
    assert.equal(second.code, 0, second.output);
    const hop = reportOf(second.output);
    for (const report of [sourceReport, hop]) {
      assert.ok(report.verified);
      for (const table of report.tables) assert.equal(table.sourceChecksum, table.targetChecksum, table.table);
    }
    assert.deepEqual(checksums(hop), checksums(sourceReport), 'the same rows, byte for byte, on all three stores');
    const tables = sourceReport.tables.map((t) => t.table);
    for (const table of ['webhook_events', 'archived_event_keys', 'payments', 'orders', 'enrollments', 'outbox', 'event_replays', 'event_attempts', 'bulk_replays']) {
      const copied = sourceReport.tables.find((t) => t.table === table);
      assert.ok(copied && copied.sourceRows > 0 && copied.targetRows === copied.sourceRows, table);
    }
    const events = sourceReport.tables.find((t) => t.table === 'webhook_events')!;
    assert.deepEqual([events.sourceRows, events.targetRows, events.copiedNow], [EVENTS + 3, EVENTS + 3, EVENTS + 3]);
    const target = inspectDatabase(toMysql!.url, 1);
    try {
      const replay = await target.selectFrom('event_replays').select(['previous_outcome', 'previous_owner', 'made_due_at']).executeTakeFirstOrThrow();
      assert.equal(replay.previous_outcome, 'applied: payment pi_copy_0 captured', 'the processing a replay replaced');
      assert.equal(replay.previous_owner, 'host:1:abcd');
      assert.notEqual(replay.made_due_at, null);
    } finally {
      await target.destroy();
    }
    for (const table of ['copy_progress', 'schema_migrations', 'operation_locks', 'scheduled_runs', 'admin_sessions', 'admin_sign_in_failures'])
      assert.ok(!tables.includes(table), `bookkeeping (${table}) is not copied`);
  });

  test('the copy goes on as an installation: a new event gets an id after the copied ones', async () => {
    const harness = await Harness.start(viaPostgres!.url);
    try {
      const answer = await harness.post(stripeDelivery(stripePaymentEvent('evt_after_copy', 'payment_intent.succeeded', 'pi_after_copy')));
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      const newest = await harness.db.selectFrom('webhook_events').select('id').where('event_id', '=', 'evt_after_copy').executeTakeFirstOrThrow();
      assert.equal(Number(newest.id), EVENTS + 4);
      await harness.waitUntilProcessed(EVENTS + 1, 30_000);
    } finally {
      await harness.close();
    }
  });

  test('a target that holds events is refused without --merge, and nothing is written', async () => {
    const refused = await cli(['copy', '--from', viaPostgres!.url, '--to', from!.url], {});
    assert.equal(refused.code, 1, refused.output);
    assert.match(refused.output, /the target already holds \d+ events: copy into an empty database, or pass --merge/);
    // The target's own version of a row the source also holds: a merge must not pass it as copied.
    const target = inspectDatabase(from!.url, 1);
    try {
      await target.updateTable('webhook_events').set({ attempts: 9 }).where('event_id', '=', 'evt_copy_0').execute();
    } finally {
      await target.destroy();
    }
    const merged = await cli(['copy', '--from', viaPostgres!.url, '--to', from!.url, '--merge', '--json'], {});
    assert.equal(merged.code, 1, 'the rows the target had are not the source rows of the same ids');
    const report = reportOf(merged.output);
    assert.equal(report.verified, false);
    const events = report.tables.find((t) => t.table === 'webhook_events')!;
    assert.notEqual(events.targetChecksum, events.sourceChecksum, 'the changed event row is told apart');
    assert.deepEqual([events.copiedNow, events.targetRows], [1, EVENTS + 4], 'only the event the source had beyond the target');
  });

  test('bad arguments are usage errors naming the option', async () => {
    const result = await cli(['copy', '--from', 'oracle://x/y', '--to', other!.url], {});
    assert.equal(result.code, 2, result.output);
    assert.match(result.output, /option '--from <url>' argument 'oracle:\/\/x\/y' is invalid/);
    const batch = await cli(['copy', '--from', from!.url, '--to', other!.url, '--batch-size', '5000'], {});
    assert.equal(batch.code, 2, batch.output);
    assert.match(batch.output, /option '--batch-size <rows>' argument '5000' is invalid/);
  });

  test('a copy cut short resumes where it stopped, and ends verified', async () => {
    const source = serviceInbox(testConfig(from!.url));
    const target = serviceInbox(testConfig(other!.url));
    try {
      await target.store.migrate();
      const ends = [
        { db: source.database, backend: backendFor(from!.url), url: from!.url },
        { db: target.database, backend: backendFor(other!.url), url: other!.url },
      ] as const;
      const crash = new Error('the copy was killed');
      await assert.rejects(
        copyInstallation(ends[0], ends[1], {
          merge: false,
          batchSize: 4,
          onProgress: (table, copied) => {
            if (table === 'webhook_events' && copied === 8) throw crash;
          },
        }),
        crash,
      );
      const partial = await target.database
        .selectFrom('webhook_events')
        .select((eb) => eb.fn.countAll().as('n'))
        .executeTakeFirstOrThrow();
      assert.equal(Number(partial.n), 8, 'two batches committed');
      const resumed = await copyInstallation(ends[0], ends[1], { merge: false, batchSize: 4 });
      assert.ok(resumed.resumed && resumed.verified);
      const events = resumed.tables.find((t) => t.table === 'webhook_events')!;
      assert.deepEqual([events.copiedNow, events.targetRows], [events.sourceRows - 8, events.sourceRows]);
    } finally {
      await source.stop(0);
      await target.stop(0);
    }
  });
});
