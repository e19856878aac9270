import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { countersOf, countersPer, databaseCallsPer, headline, ownTableWrites, postgresCountersOf, tableReadCounters } from '../server-status.js';
import { statementShape } from '../statement-probe.mjs';

describe('server counters per event', () => {
  test('keeps the numeric Com_*, Handler_* and Innodb_rows_* counters, the redo bytes and Questions', () => {
    const counters = countersOf([
      { Variable_name: 'Com_insert', Value: '10' },
      { Variable_name: 'Handler_write', Value: '7' },
      { Variable_name: 'Innodb_rows_updated', Value: '3' },
      { Variable_name: 'Questions', Value: '50' },
      { Variable_name: 'Innodb_os_log_written', Value: '123456' },
      { Variable_name: 'Innodb_os_log_writes', Value: '12' },
      { Variable_name: 'Uptime', Value: '99' },
      { Variable_name: 'Com_show_status_text', Value: 'OFF' },
    ]);
    assert.deepEqual(counters, { Com_insert: 10, Handler_write: 7, Innodb_rows_updated: 3, Questions: 50, Innodb_os_log_written: 123456 });
  });

  test('divides what moved by the events, and sums statements, row writes, reads and commits', () => {
    const perEvent = countersPer(
      { Com_insert: 10, Com_update: 0, Com_select: 5, Handler_write: 0, Handler_update: 0, Handler_read_key: 0, Handler_commit: 0, Com_stmt_execute: 0 },
      { Com_insert: 30, Com_update: 40, Com_select: 5, Handler_write: 60, Handler_update: 40, Handler_read_key: 100, Handler_commit: 20, Com_stmt_execute: 60 },
      20,
    );
    assert.deepEqual(perEvent, { Com_insert: 1, Com_update: 2, Handler_write: 3, Handler_update: 2, Handler_read_key: 5, Handler_commit: 1, Com_stmt_execute: 3 });
    // Prepared executions also count under their own Com_<kind>: not counted twice.
    assert.deepEqual(headline(perEvent), { statements: 3, rowWrites: 5, rowReads: 5, commits: 1 });
  });
});

describe('database round trips and commits per acknowledgement', () => {
  test("MariaDB: its clients' statements (Questions) over the acknowledgements; no count of its transactions", () => {
    assert.deepEqual(databaseCallsPer({ Questions: 1000, Handler_commit: 50 }, { Questions: 3600, Handler_commit: 1050 }, 1000), { roundTripsPerAck: 2.6, commitsPerAck: null });
  });

  test('PostgreSQL: pg_stat_statements calls where the extension counts them, and commits either way', () => {
    assert.deepEqual(databaseCallsPer({ pg_xact_commit: 10, pg_statements: 0 }, { pg_xact_commit: 410, pg_statements: 800 }, 400), { roundTripsPerAck: 2, commitsPerAck: 1 });
    assert.deepEqual(databaseCallsPer({ pg_xact_commit: 10 }, { pg_xact_commit: 210 }, 400), { roundTripsPerAck: null, commitsPerAck: 0.5 });
  });

  test('nothing acknowledged: no figure per acknowledgement', () => {
    assert.equal(databaseCallsPer({ Questions: 1 }, { Questions: 9 }, 0), null);
  });
});

describe("PostgreSQL's counters per event", () => {
  test("keeps pg_stat_database's numeric columns (node-postgres gives bigints as strings), prefixed pg_", () => {
    assert.deepEqual(postgresCountersOf({ xact_commit: '40', tup_inserted: '120', tup_updated: 7, blks_hit: '9', stats_reset: null, pg_statements: '300' }), {
      pg_xact_commit: 40,
      pg_tup_inserted: 120,
      pg_tup_updated: 7,
      pg_blks_hit: 9,
      pg_statements: 300,
    });
  });

  test("sums row writes, reads, commits and (with pg_stat_statements) statements like MariaDB's", () => {
    const perEvent = countersPer(
      { pg_xact_commit: 100, pg_tup_inserted: 0, pg_tup_updated: 0, pg_tup_deleted: 0, pg_tup_fetched: 0, pg_tup_returned: 0 },
      { pg_xact_commit: 120, pg_tup_inserted: 60, pg_tup_updated: 40, pg_tup_deleted: 20, pg_tup_fetched: 100, pg_tup_returned: 900 },
      20,
    );
    assert.deepEqual(headline(perEvent), { statements: 0, rowWrites: 6, rowReads: 5, commits: 1 });
    assert.equal(headline({ ...perEvent, pg_statements: 4.5 }).statements, 4.5);
  });

  test("says which tables the rows were read from and written to, catalogs by their schema, without counting them twice in the headline's reads", () => {
    const counters = tableReadCounters([
      { schemaname: 'public', relname: 'outbox', seq_tup_read: '0', idx_tup_fetch: '4000', idx_scan: '200', tup_written: '300' },
      { schemaname: 'pg_catalog', relname: 'pg_class', seq_tup_read: 12, idx_tup_fetch: null, idx_scan: null, tup_written: 7 },
    ]);
    assert.deepEqual(counters, {
      'pg_seq_read:outbox': 0,
      'pg_idx_fetch:outbox': 4000,
      'pg_idx_scans:outbox': 200,
      'pg_writes:outbox': 300,
      'pg_seq_read:pg_catalog.pg_class': 12,
      'pg_writes:pg_catalog.pg_class': 7,
    });
    assert.equal(headline(countersPer({}, { ...counters, pg_tup_fetched: 4000 }, 100)).rowReads, 40);
  });

  test("rows written to the database's own tables, per event, leave its catalogs out; none on MariaDB", () => {
    assert.equal(ownTableWrites({ 'pg_writes:outbox': 1.5, 'pg_writes:webhook_events': 1, 'pg_writes:pg_catalog.pg_attribute': 40, pg_tup_inserted: 42.5 }), 2.5);
    assert.equal(ownTableWrites({ Handler_write: 3 }), null);
  });
});

describe('statement shapes', () => {
  test('one shape whatever the values and however many rows, values or cases', () => {
    const shape = (rows: number) =>
      statementShape(
        `update \`outbox\` set \`status\` = case id ${Array.from({ length: rows }, (_, i) => `when ${i} then 'sent'`).join(' ')} end where (${Array.from({ length: rows }, (_, i) => `(\`id\` = ${i} and \`lease_token\` = 'x${i}')`).join(' or ')}) and \`n\` in (${Array.from({ length: rows }, () => '?').join(', ')})`,
      );
    assert.equal(shape(2), shape(7));
    assert.equal(shape(3), 'update `outbox` set `status` = case id when … then … end where ((`id` = ? and `lease_token` = ?) or …) and `n` in (…)');
    assert.equal(statementShape("insert into `t` (`a`, `b`)\n  values (?, 'it''s'), (3, NULL)"), 'insert into `t` (`a`, `b`) values (…), …');
    assert.notEqual(statementShape('select * from `a`'), statementShape('select * from `b`'));
    // PostgreSQL's numbered placeholders are placeholders too.
    const pg = (rows: number) =>
      statementShape(`insert into "t" ("a", "b") values ${Array.from({ length: rows }, (_, i) => `($${2 * i + 1}, $${2 * i + 2})`).join(', ')} on conflict do nothing`);
    assert.equal(pg(2), pg(12));
    assert.equal(pg(3), 'insert into "t" ("a", "b") values (…), … on conflict do nothing');
  });
});
