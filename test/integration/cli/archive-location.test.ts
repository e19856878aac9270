import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import type { Kysely } from 'kysely';
import { backendFor } from '../../../src/db/open-database.js';
import { toDbTime, type InboxDatabase } from '../../../src/db/schema.js';
import { cli } from '../../support/cli.js';
import { seedEvents } from '../../support/events.js';
import { startS3Server, type TestS3 } from '../../support/s3-server.js';

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

/** `--to s3://...` and `--from s3://...` reach the bucket (a real S3-compatible server), never a local folder named `s3:`. */
describe('an s3:// archive from the command line', () => {
  let cwd: string;
  let s3: TestS3;
  let bucket: string;
  let db: Kysely<InboxDatabase>;
  let env: Record<string, string>;
  const CANARY = 'CANARYs3cr3tCANARY0123456789';
  const rows = async () => (await db.selectFrom('webhook_events').select('event_id').execute()).length;

  before(async () => {
    cwd = await mkdtemp(join(tmpdir(), 'wi-archive-s3-cli-'));
    s3 = await startS3Server();
    bucket = await s3.createBucket('cli');
    env = { DATABASE_URL: `sqlite:${join(cwd, 'inbox.db')}`, ...s3.env };
    assert.equal((await cli(['migrate'], env, cwd)).code, 0);
    db = backendFor(env.DATABASE_URL!).connect(env.DATABASE_URL!, { poolSize: 1 });
    const old = Date.now() - 100 * 86_400_000;
    await seedEvents(
      db,
      Array.from({ length: 30 }, (_, i) => ({ event_id: `evt_cli_${i}`, created_at: toDbTime(new Date(old + i * 1000)), payload: `{"id":"evt_cli_${i}","note":"₹ 🙂"}` })),
    );
  });
  after(async () => {
    await db?.destroy();
    await s3?.stop();
    await rm(cwd, { recursive: true, force: true });
  });

  test('a bucket that does not exist: refused before anything is deleted, naming the bucket and the S3 error', async () => {
    const missing = `wi-missing-${randomBytes(4).toString('hex')}`;
    const { code, output } = await cli(['archive', '--to', `s3://${missing}/prefix`], env, cwd);
    assert.notEqual(code, 0, output);
    assert.match(output, new RegExp(`cannot write to the archive s3://${missing}/prefix: the bucket "${missing}" does not exist \\(NoSuchBucket`));
    assert.equal(await rows(), 30);
  });

  test('refused credentials: refused before anything is deleted, naming the S3 error', async () => {
    const { code, output } = await cli(['archive', '--to', `s3://${bucket}/prefix`], { ...env, AWS_ACCESS_KEY_ID: 'AKIANOTAKEYOFOURS' }, cwd);
    assert.notEqual(code, 0, output);
    assert.match(output, /the credentials were refused \(InvalidAccessKeyId/);
    assert.equal(await rows(), 30);
  });

  test('archive --to s3://bucket/prefix writes to the bucket; search and restore read it back', async () => {
    const archive = await cli(['archive', '--to', `s3://${bucket}/webhooks/archive`, '--events-per-file', '10'], env, cwd);
    assert.equal(archive.code, 0, archive.output);
    assert.match(archive.output, new RegExp(`archived 30 events received before .* into s3://${bucket}/webhooks/archive in`));
    assert.equal(await rows(), 0);
    assert.deepEqual(
      (await readdir(cwd)).filter((name) => !name.startsWith('inbox.db')),
      [],
      'no local folder named s3:',
    );
    const keys = await s3.keys(bucket, 'webhooks/archive/');
    assert.ok(keys.includes('webhooks/archive/manifest.json'), keys.join(', '));
    assert.equal(keys.filter((key) => key.endsWith('.jsonl.gz')).length, 3);

    const search = await cli(['archive', 'search', '--from', `s3://${bucket}/webhooks/archive`, '--event', 'evt_cli_7'], env, cwd);
    assert.equal(search.code, 0, search.output);
    assert.match(search.output, /evt_cli_7/);
    const restore = await cli(['restore', '--from', `s3://${bucket}/webhooks/archive`, '--event', 'evt_cli_7'], env, cwd);
    assert.equal(restore.code, 0, restore.output);
    assert.match(restore.output, /1 restored, 0 already present/);
    const payload = await db.selectFrom('webhook_event_bodies').select('payload').executeTakeFirstOrThrow();
    assert.equal(payload.payload, '{"id":"evt_cli_7","note":"₹ 🙂"}');
  });

  test('config: the AWS credentials are neither flagged as unknown nor shown', async () => {
    const { code, output } = await cli(['config'], { ...env, AWS_SECRET_ACCESS_KEY: CANARY, AWS_PROFILE: 'archive' }, cwd);
    assert.equal(code, 0, output);
    assert.ok(!output.includes(CANARY), output);
    assert.doesNotMatch(output, /AWS_\w+ is not a webhook-inbox variable/);
    assert.match(output, /S3_ENDPOINT=/);
  });
});
