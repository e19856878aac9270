import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { BacklogRun } from '../backlog.js';
import type { LoadResult } from '../load-generator.js';
import { reportMarkdown } from '../report.js';
import type { BenchResults, CapacityRun, Step, TargetRun } from '../results.js';
import { parseSettings } from '../settings.js';
import { summarise } from '../summary.js';

const load = (acksPerSec: number): LoadResult => ({
  mode: 'saturate',
  offeredRate: null,
  startedAt: 0,
  finishedAt: 1000,
  requests: acksPerSec,
  acks: acksPerSec,
  non2xx: 0,
  errors: 0,
  acksPerSec,
  latencyMs: { count: acksPerSec, p50: 5, p99: 20, p99_9: 30, max: 40 },
  secondP99sMs: null,
  sendLateMs: null,
  uniqueEvents: acksPerSec,
  duplicatesInPool: 0,
  poolWrapped: false,
  generatorCpuMsPerRequest: 0.02,
});
const step = (acksPerSec: number, cpuMsPerAck = 0.2): Step => ({
  load: load(acksPerSec),
  serviceCpuMsPerAck: cpuMsPerAck,
  databaseCpuMsPerAck: cpuMsPerAck,
  databaseCalls: null,
  processing: null,
  workersYieldSec: null,
  hostPressure: null,
});
const run = (target: string, acksPerSec: number, repetition = 1): TargetRun => ({
  target,
  repetition,
  paced: [],
  sustained: null,
  saturation: step(acksPerSec),
  flood: null,
  peakRssMb: 100,
});
const capacity = (target: string, rate: number): CapacityRun => ({ target, repetition: 1, trials: [], capacity: rate });
const backlog = (store: BacklogRun['store'], cpuMsPerEvent: number): BacklogRun => ({
  store,
  repetition: 1,
  events: 100,
  drainSec: 1,
  eventsPerSec: 100,
  serviceCpuMsPerEvent: cpuMsPerEvent,
  workerStartupCpuSec: 0,
  databaseCpuMsPerEvent: cpuMsPerEvent,
  perEvent: {},
  statementsPerEvent: 5,
  rowWritesPerEvent: 10,
  rowReadsPerEvent: 10,
  commitsPerEvent: 1,
  statements: [],
});

describe('bench summary on two database servers', () => {
  const settings = parseSettings([
    '--quick',
    '--targets',
    'baseline,background,receive-only,sqlite,pg-baseline,pg-background,pg-receive-only',
    '--rates',
    'none',
    '--capacity',
    'background,naive,pg-background,pg-naive',
  ]);
  const summary = summarise(
    settings,
    [
      run('baseline', 1000),
      run('background', 500),
      run('receive-only', 1200),
      run('sqlite', 250),
      run('pg-baseline', 400),
      run('pg-background', 300),
      run('pg-receive-only', 1000),
    ],
    [],
    [backlog('mysql', 0.3), backlog('postgres', 0.5), { ...backlog('sqlite', 0.6), databaseCpuMsPerEvent: null }],
    [capacity('background', 600), capacity('naive', 300), capacity('pg-background', 250), capacity('pg-naive', 500)],
  );
  const target = (name: string) => summary.targets.find((t) => t.target === name)!;

  test("each target's ratio is against the baseline of its own server in the same run", () => {
    assert.equal(target('pg-background').ackRatio, 0.75);
    assert.equal(target('pg-receive-only').ackRatio, 2.5);
    assert.equal(target('background').ackRatio, 0.5);
    assert.equal(target('receive-only').ackRatio, 1.2);
    assert.equal(target('sqlite').ackRatio, 0.25, 'SQLite, serverless, against MariaDB');
    assert.equal(target('pg-baseline').ackRatio, null, 'a baseline is not quoted against itself');
  });

  test('capacity against the naive handler of the same server, processing CPU against the same server baseline', () => {
    assert.deepEqual(
      summary.capacity.map((c) => [c.target, c.ratioToNaive]),
      [
        ['background', 2],
        ['naive', null],
        ['pg-background', 0.5],
        ['pg-naive', null],
      ],
    );
    // Per event 0.3 + 0.3 ms against the baseline's 0.2 + 0.2 ms per ack, on each server; SQLite's
    // 0.6 ms is the worker's alone (the database runs inside it), against MariaDB's baseline.
    assert.deepEqual(
      summary.backlog.map((b) => [b.store, b.cpuRatioToBaselineAck]),
      [
        ['mysql', 1.5],
        ['postgres', 2.5],
        ['sqlite', 1.5],
      ],
    );
  });

  test("the targets are checked on each server, PostgreSQL's named so", () => {
    const check = (name: string) => summary.checks.find((c) => c.target === name);
    assert.equal(check('receive-only ack throughput >= 2x baseline')?.met, false);
    assert.equal(check('PostgreSQL: receive-only ack throughput >= 2x baseline')?.met, true);
    assert.equal(check('PostgreSQL: default-mode ack throughput >= 2x baseline')?.measured, '0.75x (300 vs 400 acks/s)');
    assert.equal(check("PostgreSQL: end-to-end capacity of the default mode >= 2x the naive handler's")?.met, false);
    assert.equal(check("end-to-end capacity of the default mode >= 2x the naive handler's")?.met, true);
    assert.match(check(summary.checks.find((c) => c.target.startsWith('PostgreSQL: processing CPU'))!.target)!.measured, /^2\.5x/);
  });
});

describe('the report of a run', () => {
  const results = (rates: string, backlog: BacklogRun[] = []): BenchResults => {
    const settings = parseSettings(['--quick', '--targets', 'baseline,background', '--rates', rates, '--capacity', 'none']);
    const paced = settings.rates.map((rate) => step(rate));
    const runs = [run('baseline', 1000), run('background', 900)].map((r) => ({ ...r, paced }));
    return {
      startedAt: '2026-12-06T00:00:00.000Z',
      finishedAt: '2026-12-06T00:01:00.000Z',
      command: 'npm run bench',
      machine: { cpu: '2 x test', memoryGb: 1, kernel: 'test', node: 'v20', database: 'MariaDB', loadAverage: '0' },
      settings: { ...settings, out: undefined, profileDir: undefined },
      runs,
      growth: [],
      backlog,
      capacity: [],
      summary: summarise(settings, runs, [], backlog, []),
    };
  };

  test('has no latency section, and no empty table, when the run had no fixed-rate steps', () => {
    const report = reportMarkdown(results('none'));
    assert.doesNotMatch(report, /Latency against offered load|latency\.svg/);
    assert.doesNotMatch(report, /\|\s*\|\n/, 'no table row without cells');
    assert.match(report, /## Saturation/);
  });

  test('quotes each fixed-rate step beside its chart when there were some', () => {
    const report = reportMarkdown(results('250,1000'));
    assert.match(report, /## Latency against offered load/);
    assert.match(report, /\| target \| 250\/s p50 \/ p99 \/ p99\.9 \| 1000\/s p50 \/ p99 \/ p99\.9 \|/);
  });

  test("counts the backlog worker's unprepared runs and each shape's distinct texts", () => {
    const statement = (shape: string, perEvent: number, unpreparedPerEvent: number, texts: number) => ({
      shape,
      perEvent,
      unpreparedPerEvent,
      texts,
      rowsChangedPerEvent: 0,
      msPerEvent: 0.01,
      errors: 0,
    });
    const report = reportMarkdown(
      results('none', [{ ...backlog('mysql', 0.2), statements: [statement('update `payments` set … | …', 0.5, 0.25, 37), statement('commit', 0.1, 0.1, 1)] }]),
    );
    assert.match(report, /0\.6 statements per event in all, 0\.35 of them unprepared/);
    assert.match(report, /\| `update 'payments' set … \\\| …` \| 0\.5 \| 0\.25 \| 37 \| 0 \| 0\.01 \| 0 \|/);
  });
});
