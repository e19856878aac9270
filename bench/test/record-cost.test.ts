import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { skipUnlessServer } from '../../test/support/database.js';
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
