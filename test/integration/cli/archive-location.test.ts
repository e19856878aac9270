import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { cli } from '../../support/cli.js';

/** A location the archive does not know is refused before anything is read or written: never a local folder named after it. */
describe('archive locations from the command line', () => {
  let cwd: string;
  let env: Record<string, string>;
  before(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'wi-archive-location-'));
    env = { DATABASE_URL: `sqlite:${join(cwd, 'inbox.db')}` };
    assert.equal((await cli(['migrate'], env, cwd)).code, 0);
  });
  after(async () => {
    await rm(cwd, { recursive: true, force: true });
  });

  for (const [args, words] of [
    [['archive', '--to', 'gs://bucket/prefix'], /gs: scheme is not supported/],
    [['archive', '--to', 's3:/bucket/prefix'], /is not s3:\/\/bucket\/prefix/],
    [['archive', 'search', '--from', 'ftp://host/archive', '--day', '2024-05-01'], /ftp: scheme is not supported/],
    [['restore', '--from', 's3:bucket', '--day', '2024-05-01'], /is not s3:\/\/bucket\/prefix/],
  ] as const) {
    test(`${args.join(' ')}: refused, naming what is wrong, and nothing written`, async () => {
      const { code, output } = await cli([...args], env, cwd);
      assert.notEqual(code, 0, output);
      assert.match(output, words);
      assert.deepEqual(
        (await readdir(cwd)).filter((name) => !name.startsWith('inbox.db')),
        [],
      );
    });
  }

  test('ARCHIVE_TO with an unknown scheme stops every command at start, naming the variable', async () => {
    const { code, output } = await cli(['archive'], { ...env, ARCHIVE_TO: 'gs://bucket/prefix' }, cwd);
    assert.equal(code, 2, output);
    assert.match(output, /ARCHIVE_TO "gs:\/\/bucket\/prefix": the gs: scheme is not supported/);
  });
});
