import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import { sql, type KyselyPlugin } from 'kysely';
import { createConnection } from 'mysql2/promise';
import type { PaymentEvent } from '../../../src/model/payment-event.js';
import { coursePlatform } from '../../../src/course-platform/course-platform.js';
import { composeDomains } from '../../../src/extension/compose-domains.js';
import type { CoursePlatformTables } from '../../../src/course-platform/schema.js';
import { advancePayment } from '../../../src/domain/payments.js';
import { LeaseLostError, RecordNotStoredError, StoreUnavailableError } from '../../../src/errors.js';
import type { VerifiedEvent } from '../../../src/model/delivery.js';
import { recordBatch, type BatchInsert } from '../../../src/db/recording/record-path.js';
import { newEventsInsert, returningBatch } from '../../../src/db/recording/returning.js';
import { callBatch } from '../../../src/db/mysql/record-by-call.js';
import { ConcurrentInsertError, transactionBatch } from '../../../src/db/mysql/record-in-transaction.js';
import { hasRecordEventsProcedure, runsInsertReturning } from '../../../src/db/mysql/record-path.js';
import { newEventsWithBodiesInsert, oneStatementBatch } from '../../../src/db/postgres/record-in-one-statement.js';
import { mysqlBackend } from '../../../src/db/mysql/backend.js';
import { hasInsertReturning, recordsBatchesByProcedure } from '../../../src/db/mysql/server-version.js';
import { openStore } from '../../../src/store/open-store.js';
import { backendFor } from '../../../src/db/open-database.js';
import { toDbTime } from '../../../src/db/schema.js';
import { RECORD_EVENT_PROCEDURE } from '../../../src/db/mysql/record-event-procedure-v1.js';
import { RECORD_EVENTS_PROCEDURE } from '../../../src/db/mysql/record-events-procedure-v1.js';
import { selectEventRows } from '../../../src/db/event-rows.js';
import type { CompletionBatch, InboxStore, Lease, RecordResult } from '../../../src/store/inbox-store.js';
import type { KyselyInboxStore } from '../../../src/store/kysely-store.js';
import { customOutcome, outcomeText } from '../../../src/model/outcome.js';
import { createTestDatabase, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { describeEachStore } from '../../support/store-suite.js';
import { TestClock, testConfig } from '../../support/harness.js';
import { watchingQueries } from '../../support/query-watch.js';

/**
 * Group commit (src/store/batcher.ts, group-commit.ts): concurrent calls share one transaction, yet
 * every caller gets its own, exact answer. Run on every store.
 */
const LEASE_MS = 30_000;

function verified(eventId: string): VerifiedEvent {
  return { provider: 'razorpay', eventId, eventType: 'payment.captured', payload: JSON.stringify({ id: eventId }), headers: {} };
}

await describeEachStore('group commit', { domains: [coursePlatform] }, (suite) => {
  let db: TestDatabase;
  let store: KyselyInboxStore;
  const { clock } = suite;
  before(() => {
    ({ database: db, store } = suite);
  });

  /** Records an event (about `paymentId`, if given) and claims it for one worker. */
  async function leaseOf(eventId: string, paymentId: string | null = null): Promise<Lease> {
    return (await store.claim((await store.record(verified(eventId), paymentId)).id, 'worker', LEASE_MS))!.lease;
  }

  test('one batch of new, repeated and already stored events: one "recorded" per event, every duplicate names its row', async () => {
    const old = await store.record(verified('gc_old'));
    const claimed = await store.claim(old.id, 'w', LEASE_MS);
    await store.completeFenced(claimed!.lease, async () => customOutcome('done'));

    const names = ['gc_a', 'gc_b', 'gc_a', 'gc_old', 'gc_c', 'gc_b', 'gc_a'];
    const results = await Promise.all(names.map((name) => store.record(verified(name))));
    for (const name of ['gc_a', 'gc_b', 'gc_c']) {
      const own = results.filter((_, i) => names[i] === name);
      assert.equal(own.filter((r) => r.outcome === 'recorded').length, 1, `${name} recorded once`);
      assert.equal(new Set(own.map((r) => r.id)).size, 1, `${name}: one row`);
      assert.equal((await store.findEvent('razorpay', name))?.id, own[0]!.id);
    }
    assert.deepEqual(results[3], { outcome: 'duplicate', id: old.id, status: 'processed' }, 'a stored event answers with its own row and status');
    assert.equal(results[0]!.outcome, 'recorded', 'the first delivery of an event in a batch records it');
  });

  test('an archived event delivered again within a batch is a duplicate of the row it had', async () => {
    const now = toDbTime(clock.now());
    await store.db
      .insertInto('archived_event_keys')
      .values({ provider: 'razorpay', event_id: 'gc_archived', event_row_id: 987_654, event_created_at: now, archive_file: 'archive-1.jsonl.gz', archived_at: now })
      .execute();
    const results = await Promise.all(['gc_archived', 'gc_fresh', 'gc_archived'].map((name) => store.record(verified(name))));
    assert.deepEqual(results[0], { outcome: 'duplicate', id: 987_654, status: 'processed' });
    assert.deepEqual(results[2], results[0]);
    assert.equal(results[1]!.outcome, 'recorded');
    assert.equal(await store.findEvent('razorpay', 'gc_archived'), null, 'no new row for an archived event');
  });

  test('two stores racing on the same events (two processes): still one "recorded" per event', async () => {
    const other = openStore(db.url, { poolSize: 4, clock });
    try {
      const names = Array.from({ length: 40 }, (_, i) => `gc_race_${i % 20}`);
      const results = await Promise.all(names.map((name, i) => (i % 2 === 0 ? store : other).record(verified(name))));
      for (let i = 0; i < 20; i++) {
        const own = results.filter((_, j) => names[j] === `gc_race_${i}`);
        assert.equal(own.filter((r) => r.outcome === 'recorded').length, 1, `gc_race_${i} recorded once`);
        assert.equal(new Set(own.map((r) => r.id)).size, 1);
      }
    } finally {
      await other.close();
    }
  });

  if (suite.backend === 'mysql') {
    test('deliveries are recorded on DB_RECORD_CONNECTIONS connections, a batch on each at a time', async () => {
      const own = await createTestDatabase('mysql');
      assert.ok(!('skip' in own), 'MariaDB runs where this suite does');
      const server = await createConnection({ uri: own.url });
      try {
        const migrating = openStore(own.url, { poolSize: 1, clock });
        await migrating.migrate();
        await migrating.close();
        for (const recordConnections of [1, 3]) {
          const recording = openStore(own.url, { poolSize: 1, recordConnections, clock });
          try {
            const results = await Promise.all(Array.from({ length: 200 }, (_, i) => recording.record(verified(`gc_conn_${recordConnections}_${i}`))));
            assert.ok(results.every((r) => r.outcome === 'recorded'));
            // A closed store's connections may linger a moment in the process list; the store's own stay open.
            const connected = async () =>
              Number(
                ((await server.query('select count(*) as n from information_schema.processlist where db = database() and id <> connection_id()'))[0] as Array<{ n: number }>)[0]!.n,
              );
            let count = await connected();
            for (let wait = 0; count !== recordConnections && wait < 20; wait++) {
              await new Promise((resolve) => setTimeout(resolve, 100));
              count = await connected();
            }
            assert.equal(count, recordConnections, `${recordConnections} connection(s) recorded the 200 deliveries`);
          } finally {
            await recording.close();
          }
        }
      } finally {
        await server.end();
        await own.drop();
      }
    });

    test('an insert the database drops without an error (an id already taken, as innodb_autoinc_lock_mode=2 hands out) is tried again, alone or in a batch', async () => {
      await store.record(verified('dropped_seed'));
      // The first insert of each dropped_ event is given the seed's id: INSERT IGNORE turns the collision into a warning.
      await sql`create table dropped_once (event_id varchar(255) primary key)`.execute(store.db);
      await sql`create trigger drop_first_insert before insert on webhook_events for each row begin
        if new.event_id like 'dropped\_%' and new.event_id <> 'dropped_seed' and not exists (select 1 from dropped_once where event_id = new.event_id) then
          insert into dropped_once values (new.event_id);
          set new.id = (select min(id) from webhook_events);
        end if;
      end`.execute(store.db);
      try {
        const alone = await store.record(verified('dropped_alone'));
        // One event of the batch is dropped; the others' rows stand and they are still answered as recorded.
        const batchNames = ['dropped_batch', 'kept_a', 'kept_b'];
        const batch = await Promise.all(batchNames.map((name) => store.record(verified(name))));
        for (const [name, result] of [['dropped_alone', alone], ...batch.map((r, i) => [batchNames[i]!, r] as const)] as const) {
          assert.equal(result.outcome, 'recorded', name);
          assert.equal((await store.findEvent('razorpay', name))?.id, result.id, `${name}: the answer names its row`);
        }
        const dropped = await sql<{ event_id: string }>`select event_id from dropped_once order by event_id`.execute(store.db);
        assert.deepEqual(
          dropped.rows.map((r) => r.event_id),
          ['dropped_alone', 'dropped_batch'],
          'the first insert of each dropped_ event was dropped',
        );
      } finally {
        await sql`drop trigger drop_first_insert`.execute(store.db);
        await sql`drop table dropped_once`.execute(store.db);
      }
    });
  }

  if (suite.backend === 'mysql') {
    test('an event alone is recorded by one call of the procedure (migration 0026): its row and body, or the row or archived key it duplicates', async () => {
      /** A CALL answers its result sets as rows: the procedure's one result set is the first. */
      interface Answer {
        id: number;
        outcome: string;
        status: string;
        stored_bytes: number | null;
      }
      const call = async (eventId: string, payload = '{"id":1}') =>
        (
          await sql`call ${sql.raw(RECORD_EVENT_PROCEDURE)}(${'razorpay'}, ${eventId}, ${'payment.captured'}, ${toDbTime(clock.now())}, ${null}, ${'delivery'}, ${payload}, ${'{}'}, ${Buffer.byteLength(payload)})`.execute(
            store.db,
          )
        ).rows as [Answer[]];
      const [[recorded]] = await call('proc_new', '{"name":"\u00e9t\u00e9 \u{1F600}"}');
      assert.equal(recorded?.outcome, 'recorded');
      assert.equal(recorded.stored_bytes, Buffer.byteLength('{"name":"\u00e9t\u00e9 \u{1F600}"}'), 'multi-byte text stored whole');
      const row = await selectEventRows(store.db).where('event_id', '=', 'proc_new').executeTakeFirstOrThrow();
      assert.deepEqual([row.id, row.status, row.payload, row.attempts], [Number(recorded.id), 'received', '{"name":"\u00e9t\u00e9 \u{1F600}"}', 0]);
      const byNumber = (rows: Array<{ id: number }>) => rows.map((answer) => ({ ...answer, id: Number(answer.id) }));
      assert.deepEqual(
        byNumber((await call('proc_new'))[0]),
        [{ id: row.id, outcome: 'duplicate', status: 'received', stored_bytes: null, archived: 0 }],
        'a stored event: its row',
      );
      assert.deepEqual((await call('PROC_NEW'))[0][0]?.outcome, 'recorded', 'keys compare byte for byte');
      const now = toDbTime(clock.now());
      await store.db
        .insertInto('archived_event_keys')
        .values({ provider: 'razorpay', event_id: 'proc_archived', event_row_id: 424_242, event_created_at: now, archive_file: 'archive-1.jsonl.gz', archived_at: now })
        .execute();
      assert.deepEqual(
        byNumber((await call('proc_archived'))[0]),
        [{ id: 424_242, outcome: 'duplicate', status: 'processed', stored_bytes: null, archived: 1 }],
        'an archived key: its row id',
      );
      assert.equal(await store.findEvent('razorpay', 'proc_archived'), null);
    });

    test('a payload stored with another size by the procedure is rolled back there and refused, row and body; the store still records the next event', async () => {
      await sql`create trigger cut_call_payload before insert on webhook_event_bodies for each row begin
        if new.payload like '%cut\_call%' then set new.payload = left(new.payload, 5); end if;
      end`.execute(store.db);
      try {
        await assert.rejects(store.record(verified('cut_call')), (error) => {
          assert.ok(error instanceof RecordNotStoredError, String(error));
          assert.match(error.message, /razorpay\/cut_call: the database stored 5 of its \d+ payload bytes; not acknowledged/);
          return true;
        });
        assert.equal(await store.findEvent('razorpay', 'cut_call'), null, 'no row');
        const orphans = await sql<{
          n: number;
        }>`select count(*) as n from webhook_event_bodies b where not exists (select 1 from webhook_events e where e.id = b.event_row_id)`.execute(store.db);
        assert.equal(Number(orphans.rows[0]!.n), 0, 'no body without its event');
        assert.equal((await store.record(verified('recorded_after_the_cut'))).outcome, 'recorded');
      } finally {
        await sql`drop trigger cut_call_payload`.execute(store.db);
      }
    });

    /** A migrated store on a database of its own, for a test that changes the store's procedures. */
    async function withOwnStore(use: (recording: ReturnType<typeof openStore>) => Promise<void>): Promise<void> {
      const own = await createTestDatabase('mysql');
      assert.ok(!('skip' in own), 'MariaDB runs where this suite does');
      const recording = openStore(own.url, { poolSize: 1, clock });
      try {
        await recording.migrate();
        await use(recording);
      } finally {
        await recording.close();
        await own.drop();
      }
    }

    test('the store records an event alone through the procedure: without it, the event is not acknowledged', () =>
      withOwnStore(async (recording) => {
        assert.equal((await recording.record(verified('via_call'))).outcome, 'recorded');
        await sql`drop procedure ${sql.raw(RECORD_EVENT_PROCEDURE)}`.execute(recording.db);
        await assert.rejects(recording.record(verified('without_call')), /webhook_inbox_record_event/);
        assert.equal(await recording.findEvent('razorpay', 'without_call'), null);
      }));

    test('the store records a batch of deliveries by one call of the batch procedure (migration 0027), each answered exactly', () =>
      withOwnStore(async (recording) => {
        assert.equal(await hasRecordEventsProcedure(recording.db), true, 'this MariaDB (10.11) is one the migration creates the procedure on');
        assert.equal((await mysqlBackend.recordPath(recording.db).batchInsert()).kind, 'call', 'and the store records batches by calling it');
        // The procedure, renamed, behind one of its name that counts the calls and the events each carried.
        const created = await sql<Record<string, string>>`show create procedure ${sql.raw(RECORD_EVENTS_PROCEDURE)}`.execute(recording.db);
        const definition = created.rows[0]!['Create Procedure']!;
        await sql`create table batch_calls (id int auto_increment primary key, events int not null)`.execute(recording.db);
        await sql`drop procedure ${sql.raw(RECORD_EVENTS_PROCEDURE)}`.execute(recording.db);
        await sql.raw(definition.replace(/procedure `?webhook_inbox_record_events`?/i, 'procedure counted_record_events')).execute(recording.db);
        await sql`create procedure ${sql.raw(RECORD_EVENTS_PROCEDURE)}(in p_events longtext character set utf8mb4 collate utf8mb4_bin, in p_bodies longblob)
          modifies sql data
          begin
            insert into batch_calls (events) values (json_length(p_events));
            call counted_record_events(p_events, p_bodies);
          end`.execute(recording.db);
        const stored = await recording.record(verified('bc_stored'));
        // Keys that differ only in case are two events; quotes, backslashes, tabs and emoji travel as JSON to the server.
        const names = [...Array.from({ length: 17 }, (_, i) => `bc_${i}`), 'BC_0', 'bc_"\\ \t\u00e9\u{1F600}', 'bc_</script>', 'bc_stored', 'bc_3'];
        const results = await Promise.all(names.map((name) => recording.record({ ...verified(name), payload: JSON.stringify({ id: name, text: '\u00e9t\u00e9 \u{1F600}' }) })));
        assert.deepEqual(
          results.map((r) => r.outcome),
          [...Array.from({ length: 20 }, () => 'recorded'), 'duplicate', 'duplicate'],
        );
        assert.equal(results[20]!.id, stored.id);
        assert.equal(results[21]!.id, results[3]!.id, "a copy within the batch names the first delivery's row");
        for (const [i, name] of names.slice(0, 20).entries()) {
          const row = await selectEventRows(recording.db).where('event_id', '=', name).executeTakeFirstOrThrow();
          assert.deepEqual(
            [row.id, row.payload, row.headers],
            [results[i]!.id, JSON.stringify({ id: name, text: '\u00e9t\u00e9 \u{1F600}' }), '{}'],
            `${name}: its row and its body, byte for byte`,
          );
        }
        const calls = await sql<{ events: number }>`select events from batch_calls`.execute(recording.db);
        // The first delivery finds the connection free and goes alone (the one-event procedure); the others wait and go together.
        assert.ok(calls.rows.length >= 1, 'at least one batch went by the call');
        assert.ok(
          calls.rows.every((call) => Number(call.events) >= 2),
          'a call carries a batch, never one event',
        );
        assert.ok(calls.rows.reduce((sum, call) => sum + Number(call.events), 0) <= names.length - 1, 'no event twice: the copy of bc_3 waited for its first delivery');
      }));

    test('a payload stored with another size by the batch procedure rolls the whole batch back there, and is refused naming its event', async () => {
      await sql`create trigger cut_batch_call_payload before insert on webhook_event_bodies for each row begin
        if new.payload like '%cut\_batch\_call%' then set new.payload = left(new.payload, 5); end if;
      end`.execute(store.db);
      try {
        const requests = ['bcut_beside', 'cut_batch_call'].map((name) => ({ event: verified(name), paymentId: null, receivedAt: toDbTime(clock.now()) }));
        await assert.rejects(recordBatch(requests, callBatch(store.db)), (error) => {
          assert.ok(error instanceof RecordNotStoredError, String(error));
          assert.match(error.message, /razorpay\/cut_batch_call: the database stored 5 of its \d+ payload bytes; not acknowledged/);
          return true;
        });
        for (const name of ['bcut_beside', 'cut_batch_call']) assert.equal(await store.findEvent('razorpay', name), null, `${name}: rolled back, row and body`);
        const [beside] = await recordBatch(requests.slice(0, 1), callBatch(store.db));
        assert.equal(beside?.outcome, 'recorded', 'the other event, recorded again, is stored');
      } finally {
        await sql`drop trigger cut_batch_call_payload`.execute(store.db);
      }
    });
  }

  test("each store's backend records batches its own way: this MariaDB (10.11) by the batch procedure, and it runs INSERT ... RETURNING; PostgreSQL in one statement; SQLite with INSERT ... RETURNING", async () => {
    const kinds = { mysql: 'call', postgres: 'one statement', sqlite: 'returning' } as const;
    assert.equal((await backendFor(db.url).recordPath(store.db).batchInsert()).kind, kinds[suite.backend]);
    if (suite.backend === 'mysql') assert.equal(await runsInsertReturning(store.db), true);
  });

  /** PostgreSQL records a batch in one statement, where the other stores insert with RETURNING. */
  const oneStatement = suite.backend === 'postgres';

  /** Each way a record batch can insert (BatchInsert), where this store has it; by its test name and its rows' tag. */
  const batchPaths: Array<{ kind: BatchInsert['kind']; name: string; tag: string }> = [
    oneStatement ? { kind: 'one statement', name: 'one statement (PostgreSQL)', tag: 'ret' } : { kind: 'returning', name: 'INSERT ... RETURNING', tag: 'ret' },
    ...(suite.backend === 'mysql' ? [{ kind: 'call' as const, name: 'one call of the procedure (migration 0027)', tag: 'call' }] : []),
    { kind: 'transaction', name: 'a transaction (MySQL, no RETURNING)', tag: 'tx' },
  ];
  /** The BatchInsert of `kind`, its statements run on `db`. */
  const batchInsert = (kind: BatchInsert['kind'], db = store.db): BatchInsert =>
    ({ returning: returningBatch, 'one statement': oneStatementBatch, call: callBatch, transaction: transactionBatch })[kind](db);

  for (const { kind, name: path, tag } of batchPaths) {
    /** Whether the batch reads the rows of the events it did not insert, after it inserted the others. */
    const readsAfter = kind === 'returning' || kind === 'one statement';
    const requests = (names: string[]) => names.map((name) => ({ event: verified(name), paymentId: null, receivedAt: toDbTime(clock.now()) }));

    test(`recordBatch through ${path}: new, repeated, stored and archived events, each answered exactly`, async () => {
      /** The row id the archived event had, one per path so that the paths' keys never meet. */
      const archivedRowId = 555_000 + batchPaths.findIndex((other) => other.kind === kind);
      const stored = await store.record(verified(`rb_${tag}_stored`));
      const now = toDbTime(clock.now());
      await store.db
        .insertInto('archived_event_keys')
        .values({
          provider: 'razorpay',
          event_id: `rb_${tag}_archived`,
          event_row_id: archivedRowId,
          event_created_at: now,
          archive_file: 'archive-1.jsonl.gz',
          archived_at: now,
        })
        .execute();
      // Statements run, by kind: a plugin also sees the subqueries a statement is built from, so only those that return a result count.
      const statements: string[] = [];
      const kinds = new Map<unknown, string>();
      const counter: KyselyPlugin = {
        transformQuery: ({ node, queryId }) => (kinds.set(queryId, node.kind), node),
        // A compiled query (the procedure's call) reaches only transformResult.
        transformResult: async ({ result, queryId }) => (statements.push(kinds.get(queryId) ?? 'CompiledQuery'), result),
      };
      const names = [`rb_${tag}_b`, `rb_${tag}_a`, `rb_${tag}_stored`, `rb_${tag}_b`, `rb_${tag}_archived`];
      const watched = store.db.withPlugin(counter);
      const insert = batchInsert(kind, watched);
      const results = await recordBatch(requests(names), insert);
      assert.deepEqual(
        results.map((r) => r?.outcome),
        ['recorded', 'recorded', 'duplicate', 'duplicate', 'duplicate'],
      );
      assert.equal(results[3]!.id, results[0]!.id, 'a repeat within the batch names the row its first delivery recorded');
      assert.deepEqual(results[2], { outcome: 'duplicate', id: stored.id, status: 'received' });
      assert.deepEqual(results[4], { outcome: 'duplicate', id: archivedRowId, status: 'processed' });
      assert.equal(await store.findEvent('razorpay', `rb_${tag}_archived`), null, 'no row for an archived event');
      for (const i of [0, 1]) assert.equal((await store.findEvent('razorpay', names[i]!))?.id, results[i]!.id);
      const inserts =
        kind === 'transaction'
          ? ['SelectQueryNode', 'InsertQueryNode', 'SelectQueryNode', 'InsertQueryNode', 'SelectQueryNode']
          : kind === 'call'
            ? ['CompiledQuery']
            : kind === 'one statement'
              ? ['SelectQueryNode']
              : ['InsertQueryNode', 'InsertQueryNode'];
      assert.deepEqual(
        statements,
        readsAfter ? [...inserts, 'SelectQueryNode'] : inserts,
        'the events and their bodies inserted (in one statement on PostgreSQL, by one call of the procedure), and with RETURNING one read for the events it did not insert',
      );

      statements.length = 0;
      await recordBatch(requests([`rb_${tag}_c`, `rb_${tag}_d`]), insert);
      if (kind !== 'transaction') assert.deepEqual(statements, inserts, 'a batch of new events is their rows and their bodies: two statements, or one');
    });

    test(`recordBatch through ${path}: two batches racing on the same events record each one once`, async () => {
      const names = Array.from({ length: 30 }, (_, i) => `rb_race_${tag}_${i}`);
      const orders = [names, [...names].reverse()];
      const insert = batchInsert(kind);
      const outcomes = await Promise.allSettled(orders.map((order) => recordBatch(requests(order), insert)));
      const answers = outcomes.flatMap((outcome, batch) => {
        if (outcome.status === 'fulfilled') return (outcome.value as RecordResult[]).map((result, i) => ({ name: orders[batch]![i]!, ...result }));
        // A transaction that reads before it inserts and meets the other's rows cannot tell its own: it gives up, and the store records its events one by one.
        assert.ok(kind === 'transaction' && outcome.reason instanceof ConcurrentInsertError, String(outcome.reason));
        return [];
      });
      if (kind !== 'transaction') assert.equal(answers.length, 2 * names.length, 'with RETURNING or the call neither batch gives up');
      for (const name of names) {
        const row = await store.findEvent('razorpay', name);
        const own = answers.filter((a) => a.name === name);
        assert.equal(own.filter((a) => a.outcome === 'recorded').length, 1, `${name} recorded once`);
        assert.ok(
          own.every((a) => a.id === row?.id),
          `${name}: every answer names its one row`,
        );
      }
    });
  }

  if (suite.backend === 'mysql') {
    test("this MariaDB with mysql2 cuts a string bound bare in a prepared UNION to its length modulo 65,536, and cast it comes through whole: why a payload is never bound in the record batch's UNION", async () => {
      const prepared = mysqlBackend.connect(db.url, { poolSize: 1, preparedStatements: true });
      try {
        for (const bytes of [65_535, 65_536, 65_537, 70_000, 1 << 20]) {
          const value = 'x'.repeat(bytes);
          const bare = await sql<{ v: string }>`select ${value} as v union all select ${'y'}`.execute(prepared);
          const cast = await sql<{ v: string }>`select cast(${value} as char) as v union all select cast(${'y'} as char)`.execute(prepared);
          assert.equal(bare.rows[0]!.v.length, bytes % 65_536, `${bytes} bytes bound bare`);
          assert.equal(cast.rows[0]!.v.length, bytes, `${bytes} bytes bound cast`);
        }
      } finally {
        await prepared.destroy();
      }
    });
  }

  test('payloads of 64 KiB +/- 1 and of 1 MiB and more, recorded alone and in batches with small ones, are stored byte for byte', async () => {
    // Multi-byte text: bytes and characters differ, and so would a cut counted in either.
    const sized = (bytes: number) => `{"pad":"${'\u00e9'.repeat(Math.floor((bytes - 10) / 2))}${'x'.repeat((bytes - 10) % 2)}"}`;
    const sizes = [65_535, 65_536, 65_537, 70_000, 1 << 20, 3 << 20];
    const events = sizes.flatMap((bytes, i) => [{ ...verified(`gc_large_${i}`), payload: sized(bytes) }, verified(`gc_small_${i}_a`), verified(`gc_small_${i}_b`)]);
    const alone = { ...verified('gc_large_alone'), payload: sized(70_000) };
    const results = await Promise.all([...events, alone].map((event) => store.record(event)));
    assert.ok(results.every((r) => r.outcome === 'recorded'));
    for (const event of [...events, alone]) {
      const row = await selectEventRows(store.db).where('provider', '=', event.provider).where('event_id', '=', event.eventId).executeTakeFirstOrThrow();
      assert.equal(Buffer.byteLength(row.payload), Buffer.byteLength(event.payload), `${event.eventId}: stored size`);
      assert.ok(row.payload === event.payload, `${event.eventId}: stored byte for byte`);
    }
  });

  test('a payload the database stores with another size is not acknowledged: the batch rolls back whole, and recorded alone the event is refused', async () => {
    const requests = (names: string[]) => names.map((name) => ({ event: verified(name), paymentId: null, receivedAt: toDbTime(clock.now()) }));
    // A driver or server that loses bytes on the way in.
    const cut = <Row extends { payload: string }>(rows: Row[]) => rows.map((row) => (row.payload.includes('cut_') ? { ...row, payload: row.payload.slice(0, 5) } : row));
    const cutting = (): BatchInsert => {
      if (oneStatement) {
        const statement = newEventsWithBodiesInsert(store.db);
        return oneStatementBatch(store.db, (rows, runner) => statement(cut(rows), runner));
      }
      const insert = newEventsInsert(store.db);
      return returningBatch(store.db, { ...insert, bodies: (rows, runner) => insert.bodies(cut(rows), runner) });
    };
    await assert.rejects(recordBatch(requests(['cut_batch', 'gc_beside_cut']), cutting()), (error) => {
      assert.ok(error instanceof RecordNotStoredError);
      assert.match(error.message, /razorpay\/cut_batch: the database stored 5 of its \d+ payload bytes; not acknowledged/);
      return true;
    });
    for (const name of ['cut_batch', 'gc_beside_cut']) assert.equal(await store.findEvent('razorpay', name), null, `${name}: rolled back, row and body`);
    const rowsOf = async (table: 'webhook_events' | 'webhook_event_bodies') =>
      Number(
        (
          await store.db
            .selectFrom(table)
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    assert.equal(await rowsOf('webhook_event_bodies'), await rowsOf('webhook_events'), 'one body per event');
    const [beside] = await recordBatch(requests(['gc_beside_cut']), oneStatement ? oneStatementBatch(store.db) : returningBatch(store.db));
    assert.equal(beside?.outcome, 'recorded', 'the other event, recorded again, is stored');
  });

  test('a stored row that cannot be read is claimed with its reason; the other events of its claim batch are claimed as usual', async () => {
    const broken = await store.record({ ...verified('gc_unreadable'), payload: '{"id":"gc_unrea' });
    const readable = await Promise.all(['gc_readable_1', 'gc_readable_2'].map((name) => store.record(verified(name))));
    const claims = await Promise.all([broken, ...readable].map(({ id }) => store.claim(id, 'worker', LEASE_MS)));
    assert.ok(
      claims.every((claim) => claim !== null),
      'all three claimed',
    );
    assert.match(claims[0]!.unreadable ?? '', /^the stored event cannot be read: its payload \(15 bytes stored\) is not valid JSON/);
    assert.equal(claims[0]!.event.payload, null);
    for (const [i, claim] of claims.slice(1).entries()) {
      assert.equal(claim.unreadable, undefined);
      assert.deepEqual(claim.event.payload, { id: `gc_readable_${i + 1}` });
    }
  });

  test('concurrent claims: each due event claimed once, with a lease of its own id', async () => {
    const ids = await Promise.all(['gc_claim_1', 'gc_claim_2', 'gc_claim_3'].map(async (name) => (await store.record(verified(name))).id));
    const claims = await Promise.all([...ids, ...ids].map((id) => store.claim(id, 'worker', LEASE_MS)));
    const won = claims.filter((c) => c !== null);
    assert.deepEqual(won.map((c) => c.lease.id).sort(), [...ids].sort());
    assert.deepEqual(won.map((c) => c.event.id).sort(), [...ids].sort());
  });

  test('concurrent completions: a failing event and a lost lease roll back alone', async () => {
    const names = ['gc_ok_1', 'gc_fails', 'gc_lost', 'gc_ok_2'];
    const leases = [];
    for (const name of names) leases.push(await leaseOf(name));
    const stolen = { ...leases[2]!, token: 'not-the-token' };
    const writeOrder = (paymentId: string) => async (tx: Parameters<Parameters<InboxStore['completeFenced']>[1]>[0]) => {
      const now = toDbTime(clock.now());
      await tx
        .withTables<CoursePlatformTables>()
        .insertInto('orders')
        .values({ provider: 'razorpay', payment_id: paymentId, user_id: null, course_id: null, amount: null, currency: null, status: 'paid', created_at: now, updated_at: now })
        .execute();
      if (paymentId === 'pay_fails') throw new Error('handler failed');
      return customOutcome(`order ${paymentId}`);
    };
    const results = await Promise.allSettled([
      store.completeFenced(leases[0]!, writeOrder('pay_ok_1')),
      store.completeFenced(leases[1]!, writeOrder('pay_fails')),
      store.completeFenced(stolen, writeOrder('pay_lost')),
      store.completeFenced(leases[3]!, writeOrder('pay_ok_2')),
    ]);
    assert.deepEqual(results[0], { status: 'fulfilled', value: customOutcome('order pay_ok_1') });
    assert.deepEqual(results[3], { status: 'fulfilled', value: customOutcome('order pay_ok_2') });
    assert.equal(results[1].status === 'rejected' && (results[1].reason as Error).message, 'handler failed');
    assert.ok(results[2].status === 'rejected' && results[2].reason instanceof LeaseLostError);
    const orders = await store.db.withTables<CoursePlatformTables>().selectFrom('orders').select('payment_id').where('payment_id', 'like', 'pay_%').execute();
    assert.deepEqual(orders.map((o) => o.payment_id).sort(), ['pay_ok_1', 'pay_ok_2'], 'only the successful events wrote');
    const states = await Promise.all(leases.map((lease) => store.eventState(lease.id)));
    assert.deepEqual(
      states.map((s) => s?.status),
      ['processed', 'processing', 'processing', 'processed'],
    );
  });

  /** The batch as a work sees it, with the statements of its deferred writes shown to `plugin` too. */
  const watchedBatches = new WeakMap<CompletionBatch, CompletionBatch>();
  function watchedBatch(batch: CompletionBatch, plugin: KyselyPlugin): CompletionBatch {
    if (!watchedBatches.has(batch)) watchedBatches.set(batch, { payments: batch.payments, atCommit: (write) => batch.atCommit((tx) => write(tx.withPlugin(plugin))) });
    return watchedBatches.get(batch)!;
  }

  /** The course platform's handlers, as the service runs them. */
  const courseHandlers = () => composeDomains(testConfig(suite.database.url), [coursePlatform]).handlers;

  function captured(paymentId: string, userId: string): PaymentEvent {
    return { kind: 'payment', paymentId, state: 'captured', amountMinor: 4900, currency: 'INR', email: null, metadata: { user_id: userId, course_id: 'c_read' } };
  }

  test('a completion batch reads the payments of all its events in one statement and writes them with one insert and one update', async () => {
    const now = toDbTime(clock.now());
    await store.db
      .insertInto('payments')
      .values({
        provider: 'razorpay',
        payment_id: 'pay_read_1',
        status: 'authorized',
        email: null,
        amount: null,
        currency: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
    await store.db
      .insertInto('payments')
      .values({
        provider: 'razorpay',
        payment_id: 'pay_read_2',
        status: 'created',
        email: null,
        amount: null,
        currency: null,
        metadata: JSON.stringify({ user_id: 'u_kept' }),
        created_at: now,
        updated_at: now,
      })
      .execute();
    const payments = ['pay_read_1', 'pay_read_2', 'pay_read_3', 'pay_read_4'];
    const leases = await Promise.all(payments.map((paymentId) => leaseOf(`gc_${paymentId}`, paymentId)));
    const statements: string[] = [];
    const counter = watchingQueries((node) => {
      if (!JSON.stringify(node).includes('"payments"')) return;
      statements.push({ SelectQueryNode: 'select', InsertQueryNode: 'insert', UpdateQueryNode: 'update' }[node.kind as string] ?? node.kind);
    });
    const changes = await Promise.all(
      leases.map((lease, i) =>
        store.completeFenced(lease, async (tx, batch) => {
          const change = await advancePayment(tx.withPlugin(counter), 'razorpay', captured(payments[i]!, `u_${i}`), now, watchedBatch(batch, counter));
          return customOutcome(`${change.applied} ${change.payment.status} ${change.payment.metadata.user_id}`);
        }),
      ),
    );
    assert.deepEqual(statements.sort(), ['insert', 'select', 'update'], 'one read, one insert of the new payments, one update of the stored ones');
    assert.deepEqual(
      changes.map(outcomeText),
      ['true captured u_0', 'true captured u_kept', 'true captured u_2', 'true captured u_3'],
      'each event sees its own payment, moved forward',
    );
    const stored = await store.db.selectFrom('payments').select(['payment_id', 'status', 'metadata']).where('payment_id', 'in', payments).orderBy('payment_id').execute();
    assert.deepEqual(
      stored.map(({ metadata, ...row }) => ({ ...row, metadata: JSON.parse(metadata ?? 'null') as unknown })),
      payments.map((paymentId, i) => ({ payment_id: paymentId, status: 'captured', metadata: { user_id: i === 1 ? 'u_kept' : `u_${i}`, course_id: 'c_read' } })),
      'stored as reported: details filled in only where they were missing',
    );
  });

  test('a payment row written by another writer during the batch: the batch is abandoned and its events complete alone', async () => {
    const now = toDbTime(clock.now());
    const payments = ['pay_raced_1', 'pay_raced_2'];
    const leases = await Promise.all(payments.map((paymentId) => leaseOf(`gc_${paymentId}`, paymentId)));
    let raced = false;
    const outcomes = await Promise.all(
      leases.map((lease, i) =>
        store.completeFenced(lease, async (tx, batch) => {
          const change = await advancePayment(tx, 'razorpay', captured(payments[i]!, `u_${i}`), now, batch);
          if (i === 0 && !raced) {
            raced = true;
            // Another writer's row for the second payment, after the batch read it (in the batch's own
            // transaction so that SQLite, a single writer, can run it; it goes with the abandoned batch).
            await tx
              .insertInto('payments')
              .values({
                provider: 'razorpay',
                payment_id: 'pay_raced_2',
                status: 'refunded',
                email: null,
                amount: null,
                currency: null,
                created_at: now,
                updated_at: now,
              })
              .execute();
          }
          return customOutcome(`${change.payment.status} ${batch.payments.length}`);
        }),
      ),
    );
    assert.ok(raced);
    assert.deepEqual(outcomes.map(outcomeText), ['captured 1', 'captured 1'], 'both events completed alone, after the batch was abandoned');
    const stored = await store.db.selectFrom('payments').select(['payment_id', 'status', 'metadata']).where('payment_id', 'in', payments).orderBy('payment_id').execute();
    assert.deepEqual(
      stored.map(({ metadata, ...row }) => ({ ...row, user_id: (JSON.parse(metadata ?? '{}') as Record<string, string>).user_id })),
      [
        { payment_id: 'pay_raced_1', status: 'captured', user_id: 'u_0' },
        { payment_id: 'pay_raced_2', status: 'captured', user_id: 'u_1' },
      ],
    );
  });

  test("a completion batch writes its events' orders, enrollments and outbox rows with one statement per table; a course bought again after a refund is active again", async () => {
    const now = toDbTime(clock.now());
    await store.db
      .withTables<CoursePlatformTables>()
      .insertInto('enrollments')
      .values({ user_id: 'u_again', course_id: 'c_again', status: 'revoked', provider: 'razorpay', payment_id: 'pay_refunded', created_at: now, updated_at: now })
      .execute();
    const buyers = [
      { paymentId: 'pay_rows_1', userId: 'u_rows_1', courseId: 'c_rows' },
      { paymentId: 'pay_rows_2', userId: 'u_rows_2', courseId: 'c_rows' },
      { paymentId: 'pay_rows_3', userId: 'u_rows_3', courseId: 'c_rows' },
      { paymentId: 'pay_again', userId: 'u_again', courseId: 'c_again' },
    ];
    const leases = await Promise.all(buyers.map(({ paymentId }) => leaseOf(`gc_${paymentId}`, paymentId)));
    const statements: string[] = [];
    const counter = watchingQueries((node) => {
      if (node.kind === 'InsertQueryNode') statements.push(`insert ${node.into?.table.identifier.name}`);
      if (node.kind === 'UpdateQueryNode' && JSON.stringify(node.table).includes('"enrollments"')) statements.push('update enrollments');
    });
    await Promise.all(
      leases.map((lease, i) =>
        store.completeFenced(lease, async (tx, batch) => {
          const { paymentId, userId, courseId } = buyers[i]!;
          const change = await advancePayment(
            tx,
            'razorpay',
            {
              kind: 'payment',
              paymentId,
              state: 'captured',
              amountMinor: 4900,
              currency: 'INR',
              email: `${userId}@example.com`,
              metadata: { user_id: userId, course_id: courseId },
            },
            now,
            batch,
          );
          const event = {
            id: lease.id,
            provider: 'razorpay' as const,
            eventId: `gc_${paymentId}`,
            eventType: 'payment.captured',
            payload: {},
            headers: {},
            attempts: 1,
            createdAt: clock.now(),
          };
          for (const handler of courseHandlers().captured!)
            await handler({ tx, payment: change.payment, previousStatus: change.previous, event, now, signal: new AbortController().signal, batch: watchedBatch(batch, counter) });
          return customOutcome('granted');
        }),
      ),
    );
    assert.deepEqual(
      statements.sort(),
      ['insert enrollments', 'insert orders', 'insert outbox', 'update enrollments'],
      'one statement per table for the four events, and one re-activation',
    );
    const ids = buyers.map((b) => b.paymentId);
    const orders = await store.db.withTables<CoursePlatformTables>().selectFrom('orders').select('payment_id').where('payment_id', 'in', ids).orderBy('payment_id').execute();
    assert.deepEqual(
      orders.map((o) => o.payment_id),
      [...ids].sort(),
    );
    const outbox = await store.db.selectFrom('outbox').select('idempotency_key').where('idempotency_key', 'like', '%:razorpay:pay_%').execute();
    assert.deepEqual(outbox.map((o) => o.idempotency_key).sort(), ids.flatMap((id) => [`fulfilment:razorpay:${id}`, `receipt:razorpay:${id}`]).sort());
    const enrollments = await store.db
      .withTables<CoursePlatformTables>()
      .selectFrom('enrollments')
      .select(['user_id', 'status', 'payment_id'])
      .where('course_id', 'in', ['c_rows', 'c_again'])
      .orderBy('user_id')
      .execute();
    assert.deepEqual(enrollments, [
      { user_id: 'u_again', status: 'active', payment_id: 'pay_again' },
      { user_id: 'u_rows_1', status: 'active', payment_id: 'pay_rows_1' },
      { user_id: 'u_rows_2', status: 'active', payment_id: 'pay_rows_2' },
      { user_id: 'u_rows_3', status: 'active', payment_id: 'pay_rows_3' },
    ]);
  });

  for (const failing of [false, true])
    test(
      failing
        ? "a payment's capture and its refund in a batch that cannot commit: completed alone, the capture first, the refund seeing what it wrote"
        : "a payment's capture and its refund completed together share one transaction, the refund seeing what the capture wrote",
      async () => {
        const now = toDbTime(clock.now());
        const paymentId = failing ? 'pay_both_alone' : 'pay_both';
        const [capture, refund, other] = await Promise.all([
          leaseOf(`gc_${paymentId}_captured`, paymentId),
          leaseOf(`gc_${paymentId}_refunded`, paymentId),
          leaseOf(`gc_${paymentId}_other`, `${paymentId}_other`),
        ]);
        const transactions = new Set<unknown>();
        const batches = new Set<CompletionBatch>();
        const apply = (lease: Lease, state: 'captured' | 'refunded') =>
          store.completeFenced(lease, async (tx, batch) => {
            transactions.add(tx);
            batches.add(batch);
            const change = await advancePayment(
              tx,
              'razorpay',
              { ...captured(paymentId, 'u_both'), metadata: { user_id: 'u_both', course_id: 'c_both' }, email: 'both@example.com', state },
              now,
              batch,
            );
            const event = {
              id: lease.id,
              provider: 'razorpay' as const,
              eventId: `gc_${paymentId}_${state}`,
              eventType: `payment.${state}`,
              payload: {},
              headers: {},
              attempts: 1,
              createdAt: clock.now(),
            };
            for (const handler of courseHandlers()[change.payment.status] ?? [])
              await handler({ tx, payment: change.payment, previousStatus: change.previous, event, now, signal: new AbortController().signal, batch });
            return customOutcome(`${change.applied} ${change.payment.status}`);
          });
        const [capturing, refunding, third] = await Promise.allSettled([
          apply(capture, 'captured'),
          apply(refund, 'refunded'),
          store.completeFenced(other, async () => {
            if (failing) throw new Error('handler failed');
            return customOutcome('done');
          }),
        ]);
        assert.deepEqual(
          [capturing, refunding],
          [
            { status: 'fulfilled', value: customOutcome('true captured') },
            { status: 'fulfilled', value: customOutcome('true refunded') },
          ],
          'applied in the order submitted',
        );
        if (failing) {
          assert.equal(third.status === 'rejected' && (third.reason as Error).message, 'handler failed');
        } else {
          assert.equal(transactions.size, 1, 'one transaction for the three events');
          assert.equal(batches.size, 2, 'the refund in a round of its own: a payment has one event per CompletionBatch');
        }
        const order = await store.db.withTables<CoursePlatformTables>().selectFrom('orders').select('status').where('payment_id', '=', paymentId).executeTakeFirstOrThrow();
        assert.equal(order.status, 'refunded', "the refund found the capture's order");
        const enrollment = await store.db
          .withTables<CoursePlatformTables>()
          .selectFrom('enrollments')
          .select('status')
          .where('payment_id', '=', paymentId)
          .executeTakeFirstOrThrow();
        assert.equal(enrollment.status, 'revoked');
        const outbox = await store.db.selectFrom('outbox').select('idempotency_key').where('idempotency_key', 'like', `%:razorpay:${paymentId}`).execute();
        assert.deepEqual(
          outbox.map((row) => row.idempotency_key).sort(),
          [`fulfilment-cancel:razorpay:${paymentId}`, `fulfilment:razorpay:${paymentId}`, `receipt:razorpay:${paymentId}`],
          "the cancellation, since the refund saw the capture's fulfilment request",
        );
        const states = await Promise.all([capture, refund, other].map((lease) => store.eventState(lease.id)));
        assert.deepEqual(
          states.map((state) => state?.status),
          ['processed', 'processed', failing ? 'processing' : 'processed'],
        );
      },
    );
});

test('INSERT ... RETURNING is MariaDB 10.5 and later, not MySQL; the batch procedure (migration 0027, JSON_TABLE) MariaDB 10.6 and later, not MySQL, where it is unproven', () => {
  /** Each server version: whether it has INSERT ... RETURNING, whether it gets the batch procedure. */
  const versions: Record<string, [boolean, boolean]> = {
    '10.11.19-MariaDB-0+deb12u1': [true, true],
    '11.4.2-MariaDB-log': [true, true],
    '10.6.0-MariaDB': [true, true],
    '10.5.27-MariaDB': [true, false],
    '10.4.32-MariaDB': [false, false],
    '8.0.36': [false, false],
    '8.4.0-commercial': [false, false],
    '5.7.44-log': [false, false],
    unknown: [false, false],
  };
  for (const [version, expected] of Object.entries(versions)) assert.deepEqual([hasInsertReturning(version), recordsBatchesByProcedure(version)], expected, version);
});

for (const backend of STORE_BACKENDS) {
  describe(`group commit, store unreachable (${backend})`, () => {
    test('every request waiting in the batch gets the store error (503)', async () => {
      const url = backend === 'mysql' ? 'mysql://root@127.0.0.1:1/unreachable' : `sqlite:${import.meta.filename}/not-a-directory/inbox.db`;
      const unreachable = openStore(url, { poolSize: 2, clock: new TestClock() });
      try {
        const results = await Promise.allSettled(['u1', 'u2', 'u3', 'u1'].map((name) => unreachable.record(verified(name))));
        for (const result of results)
          assert.ok(result.status === 'rejected' && result.reason instanceof StoreUnavailableError, `rejected with StoreUnavailableError: ${JSON.stringify(result)}`);
      } finally {
        await unreachable.close().catch(() => {});
      }
    });
  });
}
