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

  for (const [argv, message] of [
    [['--service-env', 'WORKER_CONCURRENCY'], /--service-env.*KEY=VALUE/],
    [['--duration', '0'], /--duration.*must be a number > 0/],
    [['--warmup', '-1'], /--warmup.*must be a number >= 0/],
    [['--repeat', '1.5'], /--repeat.*expected a whole number from 1/],
    [['--connections', 'many'], /--connections.*expected a whole number from 1/],
    [['--targets', 'nginx'], /unknown target "nginx"/],
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
