import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import pg from 'pg';
import { summariseProfile, type CpuProfile } from '../profile-summary.js';
import { runBench } from '../run.js';
import { parseSettings } from '../settings.js';
import { skipUnlessServer } from '../../test/support/database.js';

/**
 * `npm run bench -- --quick` end to end at a tiny scale: targets start, the load generator runs as
 * its own process, processing is measured, the report is written. Asserts no timings.
 */

/** A directory for one run's report, removed when the file's tests are done. */
const outs: string[] = [];
after(async () => {
  for (const out of outs) await rm(out, { recursive: true, force: true });
});
const outDir = async (prefix: string) => {
  const out = await mkdtemp(join(tmpdir(), prefix));
  outs.push(out);
  return out;
};

describe('benchmark quick mode (tiny)', { skip: await skipUnlessServer('mysql') }, () => {
  test('runs every target, the forged flood, the backlog step and the capacity search, and writes results.json, report.md, latency.svg and CPU profiles', async () => {
    const out = await outDir('wi-bench-smoke-');
    const settings = parseSettings([
      '--quick',
      '--targets',
      'baseline,ceiling,background,naive',
      '--duration',
      '1',
      '--warmup',
      '0',
      '--paced-duration',
      '1',
      '--rates',
      '50',
      '--sustained',
      '50',
      '--flood',
      '50',
      '--backlog',
      '60',
      '--capacity',
      'background',
      '--capacity-duration',
      '1',
      '--capacity-start',
      '250',
      '--capacity-refine',
      '0',
      '--connections',
      '4',
      // Through the latency proxy, so the remote-database setting runs end to end as well.
      '--db-latency',
      '1',
      '--max-rate',
      '500',
      '--out',
      out,
      '--profile',
      join(out, 'profiles'),
      '--mysql-url',
      process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306',
    ]);
    const results = await runBench(settings);

    assert.deepEqual(
      results.summary.targets.map((t) => t.target),
      ['baseline', 'ceiling', 'background', 'naive'],
    );
    for (const target of results.summary.targets) {
      assert.ok(target.acksPerSec > 0, `${target.target} acknowledged deliveries`);
      assert.equal(target.non2xx, 0, `${target.target}: every signed delivery got a 2xx`);
      assert.ok(target.peakRssMb > 0);
      assert.equal(target.paced.length, 1);
    }
    const naiveRun = results.runs.find((r) => r.target === 'naive')!;
    assert.ok(naiveRun.saturation.processing!.newEvents > 0);
    assert.equal(naiveRun.saturation.processing!.unprocessed, 0, 'the naive handler marks each event processed before answering');

    // The backlog step: the events recorded without workers, worked off by one worker alone, counted.
    const [backlog] = results.backlog;
    assert.equal(backlog!.events, 60, 'every distinct event recorded without workers waited for the worker');
    assert.ok(backlog!.drainSec !== null && backlog!.eventsPerSec! > 0, 'the worker worked the backlog off');
    // The worker's CPU is read net of its start-up, measured apart: for 60 events that difference is noise, either sign.
    assert.ok(Number.isFinite(backlog!.serviceCpuMsPerEvent) && backlog!.databaseCpuMsPerEvent! > 0, 'worker and MariaDB CPU per event measured');
    assert.ok(backlog!.perEvent.Com_update! > 0 && backlog!.rowWritesPerEvent! > 0 && backlog!.statementsPerEvent > 0, JSON.stringify(backlog!.perEvent));
    const shapes = backlog!.statements.map((s) => s.shape);
    assert.ok(
      shapes.some((shape) => shape.startsWith('update `webhook_events` set `status` = ?')),
      `the worker's statements by shape: ${shapes.join('\n')}`,
    );
    assert.ok(backlog!.statements.every((s) => s.perEvent > 0 && s.errors === 0 && s.texts >= 1));
    // MariaDB's processing pool sends its statements as text (the backend's prepareEverywhere), and the probe says so.
    assert.ok(
      backlog!.statements.every((s) => s.unpreparedPerEvent === s.perEvent),
      JSON.stringify(backlog!.statements),
    );

    // The capacity search: from --capacity-start, doubled, bounded by --max-rate.
    assert.deepEqual(
      results.summary.capacity.map((c) => c.target),
      ['background'],
    );
    const [capacity] = results.capacity;
    assert.deepEqual(
      capacity!.trials.map((t) => t.rate),
      capacity!.trials[0]!.passed ? [250, 500] : [250],
    );
    assert.equal(capacity!.capacity, Math.max(0, ...capacity!.trials.filter((t) => t.passed).map((t) => t.rate)));

    for (const run of results.runs.filter((r) => r.target === 'background')) {
      const processing = run.saturation.processing!;
      assert.ok(processing.newEvents > 0);
      assert.equal(processing.unprocessed, 0, `${run.target}: every recorded event was processed`);
      assert.ok(processing.settledAfterMs !== null && processing.settledAfterMs >= 0, `${run.target}: the time until all work was done is measured`);
      const byRank = run.sustained!.processing!.lagByPaymentRankMs.map((lags) => lags.count);
      assert.ok(byRank[0]! > 0 && byRank[1]! > 0, `${run.target}: payments' first and second events measured apart (${byRank.join(', ')})`);
      assert.ok(byRank.reduce((a, b) => a + b) <= run.sustained!.processing!.lagMs.count, 'events about no payment are in no rank');
    }
    for (const run of results.runs) {
      const calls = run.saturation.databaseCalls;
      if (run.target === 'ceiling') assert.equal(calls, null, 'the ceiling has no database to count');
      else assert.ok(calls!.roundTripsPerAck! > 0, `${run.target}: MariaDB's round trips per ack are counted (${JSON.stringify(calls)})`);
    }
    const [baseline, ceiling, background] = results.summary.targets;
    for (const target of [baseline!, background!]) assert.ok(target.databaseCpuMsPerAck! > 0, `${target.target}: MariaDB's CPU per ack is measured (it runs on this machine)`);
    assert.ok(ceiling!.ackRatio! > 0 && background!.ackRatio! > 0, 'quoted as a ratio to the baseline');
    const flood = background!.flood!;
    assert.equal(flood.forgedAccepted, 0, 'no forged delivery got a 2xx');
    assert.equal(flood.validRefused, 0, 'every valid delivery was acknowledged during the flood');
    assert.ok(flood.forgedPerSec > 0);
    assert.ok(results.summary.checks.length > 0);

    const saved = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')) as typeof results;
    assert.deepEqual(saved.summary, results.summary);
    assert.match(readFileSync(join(out, 'report.md'), 'utf8'), /\| webhook-inbox, background \(default\) \| \d+/);
    assert.match(readFileSync(join(out, 'report.md'), 'utf8'), /\| ceiling \(node:http \+ signature check, no database\) \| \d+/);
    assert.match(readFileSync(join(out, 'report.md'), 'utf8'), /## End-to-end capacity[\s\S]*\| webhook-inbox, background \(default\) \| \d+ \| — \|/);
    assert.match(readFileSync(join(out, 'report.md'), 'utf8'), /## Backlog on MariaDB: processing alone \(60 events[\s\S]*\| `update 'webhook_events' set 'status' = \?/);
    assert.match(readFileSync(join(out, 'latency.svg'), 'utf8'), /^<svg [^>]*>[\s\S]*<polyline|<circle/);
    assert.ok(existsSync(join(out, 'latency.svg')));
    assert.match(readFileSync(join(out, 'report.md'), 'utf8'), /through a proxy that delayed every packet 1 ms each way/);
    assert.match(
      readFileSync(join(out, 'report.md'), 'utf8'),
      /\| webhook-inbox, background \(default\) \| \d+ \|.*\| [\d.]+ \/ [\d.]+; [\d.]+ \/ [\d.]+; /,
      'the sustained step splits the lag by place in the payment',
    );

    // Each target's log is kept beside the report, to look into a run's non-2xx afterwards.
    const logs = readdirSync(join(out, 'logs'));
    assert.deepEqual(
      logs.map((name) => name.replace(/-\d+\.log$/, '')).sort(),
      ['background', 'background', 'baseline', 'ceiling', 'naive', 'receive-only', 'worker', 'worker'],
      logs.join(', '),
    );
    assert.match(
      readFileSync(
        join(
          out,
          'logs',
          logs.find((name) => name.startsWith('background'))!,
        ),
        'utf8',
      ),
      /Server listening/,
    );

    // --profile: each target's CPU profiles, which bench/profile-summary.ts reads per function.
    for (const target of ['baseline-1', 'ceiling-1', 'background-1', 'naive-1', 'backlog-worker-1']) {
      const files = readdirSync(join(out, 'profiles', target));
      const profiles = files.filter((name) => name.endsWith('.cpuprofile'));
      assert.ok(profiles.length > 0, `${target}: ${files.join(', ')}`);
      for (const profile of profiles) assert.match(summariseProfile(JSON.parse(readFileSync(join(out, 'profiles', target, profile), 'utf8')) as CpuProfile), /^total sampled: /);
    }
  });
});

describe('benchmark on PostgreSQL (tiny)', { skip: await skipUnlessServer('postgres') }, () => {
  test('runs the PostgreSQL targets and backlog step, quotes them against the PostgreSQL baseline, and drops its databases', async () => {
    const out = await outDir('wi-bench-smoke-pg-');
    const postgresUrl = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432';
    const settings = parseSettings([
      '--quick',
      '--targets',
      'pg-baseline,pg-background,pg-receive-only,pg-naive',
      ...['--duration', '1', '--warmup', '0', '--paced-duration', '1', '--rates', '50', '--sustained', '0', '--flood', '0'],
      ...['--backlog', '40', '--capacity', 'none', '--connections', '4', '--max-rate', '500', '--out', out],
      ...['--postgres-url', postgresUrl, '--mysql-url', process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306'],
    ]);
    const results = await runBench(settings);

    const targets = results.summary.targets;
    assert.deepEqual(
      targets.map((t) => t.target),
      ['pg-baseline', 'pg-background', 'pg-receive-only', 'pg-naive'],
    );
    for (const target of targets) {
      assert.ok(target.acksPerSec > 0, `${target.target} acknowledged deliveries`);
      assert.equal(target.non2xx, 0, `${target.target}: every signed delivery got a 2xx`);
      assert.ok(target.databaseCpuMsPerAck! > 0, `${target.target}: PostgreSQL's CPU per ack is measured (it runs on this machine)`);
    }
    for (const run of results.runs) assert.ok(run.saturation.databaseCalls!.commitsPerAck! > 0, `${run.target}: PostgreSQL's commits per ack are counted`);
    const saturation = (name: string) => results.runs.find((r) => r.target === name)!.saturation.load.acksPerSec;
    const background = targets.find((t) => t.target === 'pg-background')!;
    assert.equal(background.ackRatio, Math.round((saturation('pg-background') / saturation('pg-baseline')) * 1000) / 1000, 'against the PostgreSQL baseline');
    const naive = results.runs.find((r) => r.target === 'pg-naive')!.saturation.processing!;
    assert.ok(naive.newEvents > 0);
    assert.equal(naive.unprocessed, 0, 'the naive handler marks each event processed before answering, on PostgreSQL too');
    assert.match(String(results.machine.postgres), /^PostgreSQL \d+/);

    assert.deepEqual(
      results.backlog.map((b) => b.store),
      ['postgres'],
    );
    const [backlog] = results.backlog;
    assert.equal(backlog!.events, 40, 'every distinct event recorded without workers waited for the worker');
    assert.ok(backlog!.eventsPerSec! > 0 && backlog!.databaseCpuMsPerEvent! > 0);
    assert.ok(backlog!.perEvent.pg_xact_commit! > 0 && backlog!.rowWritesPerEvent! > 0 && backlog!.statementsPerEvent > 0, JSON.stringify(backlog!.perEvent));
    const shapes = backlog!.statements.map((s) => s.shape);
    assert.ok(
      shapes.some((shape) => shape.startsWith('update "webhook_events" set "status" = ?')),
      `the worker's statements by shape, through pg: ${shapes.join('\n')}`,
    );
    // Statements without values are never prepared (prepared-pool.ts); the probe reads the name pg is given.
    const commit = backlog!.statements.find((s) => s.shape === 'commit');
    assert.ok(commit && commit.unpreparedPerEvent === commit.perEvent, JSON.stringify(commit));
    assert.ok(backlog!.statements.every((s) => s.unpreparedPerEvent <= s.perEvent && s.texts >= 1));
    assert.match(readFileSync(join(out, 'report.md'), 'utf8'), /## Backlog on PostgreSQL: processing alone \(40 events/);
    assert.match(readFileSync(join(out, 'report.md'), 'utf8'), /\| PostgreSQL baseline \(node:http \+ 1 INSERT \.\.\. ON CONFLICT DO NOTHING\) \| \d+/);

    // Every database of the run was dropped.
    const client = new pg.Client({ connectionString: `${postgresUrl}/postgres` });
    await client.connect();
    try {
      const { rows } = await client.query('select datname from pg_database where datname like $1', [`wi_bench_${process.pid}_%`]);
      assert.deepEqual(rows, []);
    } finally {
      await client.end();
    }
  });
});

describe('benchmark on SQLite (tiny)', () => {
  test('runs receive-only on SQLite and the backlog step there: the worker CPU, no server counters, the statements timed by the probe', async () => {
    const out = await outDir('wi-bench-smoke-sqlite-');
    const settings = parseSettings([
      '--quick',
      ...['--targets', 'sqlite-receive-only', '--duration', '1', '--warmup', '0', '--rates', 'none', '--sustained', '0', '--flood', '0'],
      ...['--backlog', '40', '--capacity', 'none', '--connections', '4', '--out', out],
      ...['--mysql-url', process.env.TEST_MYSQL_URL ?? 'mysql://root@127.0.0.1:3306'],
    ]);
    const results = await runBench(settings);

    const [receiver] = results.summary.targets;
    assert.equal(receiver!.target, 'sqlite-receive-only');
    assert.ok(receiver!.acksPerSec > 0 && receiver!.non2xx === 0);
    assert.deepEqual(
      results.backlog.map((b) => b.store),
      ['sqlite'],
    );
    const [backlog] = results.backlog;
    assert.equal(backlog!.events, 40, 'every distinct event recorded without workers waited for the worker');
    assert.ok(
      backlog!.eventsPerSec! > 0 && Number.isFinite(backlog!.serviceCpuMsPerEvent),
      'the worker worked the backlog off, its CPU read (net of start-up: noise at this size)',
    );
    assert.equal(backlog!.databaseCpuMsPerEvent, null, "SQLite's CPU is the worker's own");
    assert.deepEqual([backlog!.rowWritesPerEvent, backlog!.commitsPerEvent, backlog!.perEvent], [null, null, {}]);
    const shapes = backlog!.statements.map((s) => s.shape);
    assert.ok(
      shapes.some((shape) => shape.startsWith('update "webhook_events" set "status" = ?')),
      `the worker's statements by shape, through better-sqlite3: ${shapes.join('\n')}`,
    );
    assert.ok(backlog!.statementsPerEvent > 0 && backlog!.statements.every((s) => s.perEvent > 0 && s.errors === 0 && s.msPerEvent >= 0));
    const report = readFileSync(join(out, 'report.md'), 'utf8');
    assert.match(report, /## Backlog on SQLite: processing alone \(40 events/);
    assert.match(report, /\| in the worker \|/);
    assert.match(report, /\| statement \| per event \| unprepared per event \| texts \| rows changed per event \| execution ms per event \| errors \|/);
    assert.ok(
      backlog!.statements.every((s) => s.unpreparedPerEvent === 0),
      'better-sqlite3 runs every statement prepared',
    );
  });
});
