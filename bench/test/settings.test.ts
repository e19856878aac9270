import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CommanderError } from 'commander';
import { parseSettings } from '../settings.js';

/** The bench's command line: bad values are refused by name, before any target starts. */
describe('bench settings', () => {
  // Commander prints its message to stderr, which each refusal captures to check it names the option.
  const parse = (argv: string[]) => parseSettings(['--quick', ...argv]);

  test('collects --service-env pairs, keeping "=" inside a value', () => {
    assert.deepEqual(parse(['--service-env', 'WORKER_CONCURRENCY=8', 'NODE_OPTIONS=--max-old-space-size=256']).serviceEnv, {
      WORKER_CONCURRENCY: '8',
      NODE_OPTIONS: '--max-old-space-size=256',
    });
    assert.deepEqual(parse([]).serviceEnv, {});
  });

  test('the backlog step and the capacity search: full and quick defaults, and what the options set', () => {
    const full = parseSettings([]);
    assert.equal(full.backlogEvents, 20_000);
    assert.deepEqual(full.capacityTargets, ['background', 'naive', 'pg-background', 'pg-naive']);
    assert.deepEqual([full.capacityDurationSec, full.capacityStart, full.capacityRefine], [60, 250, 3]);
    const quick = parse([]);
    assert.equal(quick.backlogEvents, 1_000);
    assert.deepEqual(quick.capacityTargets, ['background', 'naive', 'pg-background', 'pg-naive']);
    assert.deepEqual([quick.capacityDurationSec, quick.capacityStart, quick.capacityRefine], [3, 250, 1]);
    const set = parse(['--backlog', '0', '--capacity', 'naive', '--capacity-duration', '30', '--capacity-start', '400', '--capacity-refine', '0']);
    assert.equal(set.backlogEvents, 0);
    assert.deepEqual(set.capacityTargets, ['naive']);
    assert.deepEqual([set.capacityDurationSec, set.capacityStart, set.capacityRefine], [30, 400, 0]);
    assert.deepEqual(parse(['--capacity', 'none']).capacityTargets, []);
    assert.ok(full.targets.includes('naive'), 'a full run measures the naive handler beside the others');
  });

  test('PostgreSQL targets: in the default sets, chosen by name, on the server --postgres-url names', () => {
    const full = parseSettings([]);
    for (const name of ['baseline', 'background', 'receive-only', 'naive', 'pg-baseline', 'pg-background', 'pg-receive-only', 'pg-naive']) {
      assert.ok(full.targets.includes(name), `a full run measures ${name}: MariaDB and PostgreSQL rows in one run`);
    }
    assert.deepEqual(parse([]).targets, ['baseline', 'background', 'inline', 'pg-baseline', 'pg-background']);
    assert.deepEqual(parse(['--targets', 'pg-baseline, pg-receive-only']).targets, ['pg-baseline', 'pg-receive-only']);
    assert.equal(parse(['--postgres-url', 'postgres://bench@db.example:5433']).postgresUrl, 'postgres://bench@db.example:5433');
    assert.match(parse([]).postgresUrl, /^postgres:\/\//);
  });

  for (const [argv, message] of [
    [['--service-env', 'WORKER_CONCURRENCY'], /--service-env.*KEY=VALUE/],
    [['--duration', '0'], /--duration.*must be a number > 0/],
    [['--warmup', '-1'], /--warmup.*must be a number >= 0/],
    [['--repeat', '1.5'], /--repeat.*expected a whole number from 1/],
    [['--connections', 'many'], /--connections.*expected a whole number from 1/],
    [['--targets', 'nginx'], /unknown target "nginx"/],
    [['--targets', 'pg-inline'], /unknown target "pg-inline"/],
    [['--capacity', 'background,nginx'], /--capacity.*unknown target "nginx"/],
    [['--backlog', '1.5'], /--backlog.*must be a whole number >= 0/],
    [['--capacity-refine', '-1'], /--capacity-refine.*must be a whole number >= 0/],
    [['--capacity-duration', '0'], /--capacity-duration.*must be a number > 0/],
  ] as const) {
    test(`refuses ${argv.join(' ')}`, () => {
      const stderr = process.stderr.write.bind(process.stderr);
      let printed = '';
      process.stderr.write = (chunk: string) => ((printed += chunk), true);
      try {
        assert.throws(
          () => parse([...argv]),
          (error) => error instanceof CommanderError && error.exitCode === 1,
        );
      } finally {
        process.stderr.write = stderr;
      }
      assert.match(printed, message);
    });
  }
});
