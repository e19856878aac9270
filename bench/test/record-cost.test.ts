import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { skipUnlessServer } from '../../test/support/database.js';
import { PrivateMariadb, type Unavailable } from '../../test/support/services.js';
import { DEFAULT_SERVERS } from '../database.js';
import { recordCostReport, runRecordCost, type RecordCostRun } from '../record-cost.js';

const run = (overrides: Partial<RecordCostRun>): RecordCostRun => ({
  variant: 'inbox',
  concurrency: 16,
  repetition: 1,
  events: 100,
  eventsPerSec: 1000,
  clientCpuMsPerEvent: 0.05,
  databaseCpuMsPerEvent: 0.1,
  statementsPerEvent: 0.3,
  roundTripsPerEvent: 0.06,
  rowWritesPerEvent: 2,
  ...overrides,
});

const skips = { mysql: await skipUnlessServer('mysql'), postgres: await skipUnlessServer('postgres') };

describe('record cost probe', () => {
  test("the report's ratios are the inbox's medians over the baseline's, per concurrency", () => {
    const report = recordCostReport([
      run({ databaseCpuMsPerEvent: 0.1 }),
      run({ databaseCpuMsPerEvent: 0.3, repetition: 2 }),
      run({ databaseCpuMsPerEvent: 0.12, repetition: 3 }),
      run({ variant: 'baseline', databaseCpuMsPerEvent: 0.2, eventsPerSec: 2000, clientCpuMsPerEvent: 0.1 }),
      run({ concurrency: 64, databaseCpuMsPerEvent: null }),
      run({ concurrency: 64, variant: 'baseline' }),
    ]);
    assert.match(report, /^16 in flight, medians, inbox x baseline: events\/s 0\.5x, client CPU 0\.5x, database CPU 0\.6x$/m);
    assert.match(report, /^64 in flight, medians, inbox x baseline: events\/s 1x, client CPU 1x, database CPU —$/m);
  });

  for (const store of ['mysql', 'postgres'] as const) {
    test(`${store}: records every event both ways and reads what each cost`, { skip: skips[store] }, async () => {
      const runs = await runRecordCost({ ...DEFAULT_SERVERS, store, events: 300, concurrency: [16], variants: ['inbox', 'baseline'], recordConnections: 1, repeat: 1 });
      assert.deepEqual(
        runs.map((r) => r.variant),
        ['inbox', 'baseline'],
      );
      const [inbox, baseline] = runs as [RecordCostRun, RecordCostRun];
      // MariaDB's counters are the whole server's, which other test files share: only PostgreSQL's, the database's own, are exact here.
      if (store === 'postgres') {
        assert.ok(inbox.rowWritesPerEvent >= 2, `an event row and a body row each: ${inbox.rowWritesPerEvent}`);
        assert.ok(baseline.rowWritesPerEvent >= 1 && baseline.rowWritesPerEvent < 2, `one row each: ${baseline.rowWritesPerEvent}`);
      }
      for (const r of runs) {
        assert.ok(r.databaseCpuMsPerEvent !== null, 'a local server: its CPU is read');
        assert.ok(r.clientCpuMsPerEvent > 0);
      }
    });
  }
});

describe('record cost probe, per statement (private MariaDB servers)', () => {
  let withHistory: PrivateMariadb;
  let without: PrivateMariadb;
  let started: PrivateMariadb[] = [];
  let skip: string | false = false;

  before(async () => {
    const servers = await Promise.all([
      PrivateMariadb.start(['--performance-schema=ON', '--performance-schema-events-statements-history-long-size=20000']),
      PrivateMariadb.start(['--performance-schema=OFF']),
    ]);
    started = servers.filter((server): server is PrivateMariadb => !('skip' in server));
    const unavailable = servers.find((server): server is Unavailable => 'skip' in server);
    if (unavailable) skip = unavailable.skip;
    else [withHistory, without] = started as [PrivateMariadb, PrivateMariadb];
  });
  after(() => Promise.all(started.map((server) => server.destroy())));

  const options = (mysqlUrl: string) => ({
    ...DEFAULT_SERVERS,
    mysqlUrl,
    store: 'mysql' as const,
    events: 300,
    concurrency: [16],
    recordConnections: 1,
    repeat: 1,
    statements: true,
  });

  test("each of the record procedure's statements, and the baseline's one execution per event", async (t) => {
    if (skip) return t.skip(skip);
    const [inbox, baseline] = (await runRecordCost({ ...options(withHistory.url), variants: ['inbox', 'baseline'] })) as [RecordCostRun, RecordCostRun];
    const bodies = inbox.statements?.find((c) => c.statement.startsWith('insert into webhook_event_bodies'));
    assert.ok(bodies, `the body insert is listed: ${JSON.stringify(inbox.statements)}`);
    assert.equal(bodies.inProcedure, true);
    // Batched: one statement for several events, each examined.
    assert.ok(bodies.callsPerEvent > 0 && bodies.callsPerEvent < 0.5, `calls per event ${bodies.callsPerEvent}`);
    assert.ok(bodies.microsPerEvent > 0 && bodies.rowsExaminedPerEvent >= 1);
    assert.ok(!inbox.statements!.some((c) => /performance_schema|SHOW GLOBAL STATUS/i.test(c.statement)), "the probe's own readings are left out");
    const executions = baseline.statements?.find((c) => c.statement.startsWith('statement/com/Execute'));
    assert.ok(executions, `the baseline's prepared insert is listed: ${JSON.stringify(baseline.statements)}`);
    // One per event, give or take a statement of the pool's own.
    assert.ok(Math.abs(executions.callsPerEvent - 1) <= 0.01, `executions per event ${executions.callsPerEvent}`);

    const report = recordCostReport([inbox, baseline]);
    assert.match(report, /^inbox, 16 in flight, run 1: statements/m);
    assert.match(report, /^\| insert into webhook_event_bodies .* \| yes \| /m);
  });

  test('--statements on PostgreSQL is refused before anything runs', async () => {
    await assert.rejects(runRecordCost({ ...options('mysql://unused'), store: 'postgres', variants: ['inbox'] }), /--statements reads MariaDB's performance_schema/);
  });

  test('a server without performance_schema is refused, naming the option it needs', async (t) => {
    if (skip) return t.skip(skip);
    await assert.rejects(runRecordCost({ ...options(without.url), variants: ['inbox'] }), /--statements needs a MariaDB started with --performance-schema=ON/);
  });
});
