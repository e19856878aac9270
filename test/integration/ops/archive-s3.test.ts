import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { loadConfig } from '../../../src/config/load.js';
import type { OperationsSettings } from '../../../src/config/settings.js';
import { OperationLock } from '../../../src/db/operation-lock.js';
import { selectEventRows, type EventRow } from '../../../src/db/event-rows.js';
import { toDbTime } from '../../../src/db/schema.js';
import { Archiver } from '../../../src/ops/archive/archiver.js';
import type { ArchivedEvent } from '../../../src/ops/archive/files.js';
import { loadManifest, type Manifest } from '../../../src/ops/archive/manifest.js';
import { openArchive, openArchiveStorage } from '../../../src/ops/archive/open-storage.js';
import { restoreFromArchive, searchArchive } from '../../../src/ops/archive/restore.js';
import { scheduleOperations } from '../../../src/ops/schedule.js';
import { ProviderRegistry } from '../../../src/providers/registry.js';
import { createTestDatabase, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { seedEvents } from '../../support/events.js';
import { Harness, testConfig, waitFor } from '../../support/harness.js';
import { startRefusingS3Proxy } from '../../support/refusing-s3-proxy.js';
import { startS3Server } from '../../support/s3-server.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';

const DAY_MS = 86_400_000;
const NINETY_DAYS = 90 * DAY_MS;
const providers = new ProviderRegistry({ stripe: null, razorpay: null, payu: null });
const daysAgo = (days: number) => toDbTime(new Date(Date.now() - days * DAY_MS));
/** Seeded events start here, so that a day's events stay on that day whatever the time of the run. */
const NOON_100_DAYS_AGO = Math.floor(Date.now() / DAY_MS - 100) * DAY_MS + DAY_MS / 2;

/** Payloads whose bytes a careless round trip would change. */
const TRICKY_PAYLOADS = [
  '{"id":"x","note":"caf\\u00e9 vs café","emoji":"🙂","rupee":"₹"}',
  '{\n  "pretty": true,\r\n  "tab":\t"x"\n}\n',
  '{"line_separator":"\u2028","quote":"\\"","backslash":"\\\\","big":12345678901234567890}',
];

const s3 = await startS3Server();
/** The archive settings a process configured for the test server has (STANDARD_IA, which s3rver knows, for the files). */
const archiveSettings = (env: Record<string, string> = {}): OperationsSettings['archive'] =>
  loadConfig({ ...s3.env, ARCHIVE_STORAGE_CLASS: 'STANDARD_IA', ...env }).operations.archive;

async function allRows(harness: Harness): Promise<EventRow[]> {
  return selectEventRows(harness.db).orderBy('id').execute();
}

function sameEvent(copy: ArchivedEvent | EventRow, original: EventRow): void {
  assert.ok(Buffer.from(copy.payload, 'utf8').equals(Buffer.from(original.payload, 'utf8')), `payload bytes of ${original.event_id}`);
  for (const column of ['provider', 'event_id', 'event_type', 'status', 'attempts', 'outcome', 'last_error', 'created_at', 'processed_at', 'headers'] as const) {
    assert.equal(copy[column], original[column], `${column} of ${original.event_id}`);
  }
}

/** Old processed events with ids of their own (`prefix_N`), over `days` days. */
async function seedOld(harness: Harness, prefix: string, count: number, options: { days?: number; payload?: (i: number) => string } = {}) {
  const { days = 2, payload = (i: number) => TRICKY_PAYLOADS[i % TRICKY_PAYLOADS.length]! } = options;
  await seedEvents(
    harness.db,
    Array.from({ length: count }, (_, i) => ({
      event_id: `${prefix}_${i}`,
      created_at: toDbTime(new Date(NOON_100_DAYS_AGO - (i % days) * DAY_MS + i * 1000)),
      payload: payload(i),
    })),
  );
}

after(async () => {
  await s3.stop();
});

for (const backend of STORE_BACKENDS) {
  const database = await createTestDatabase(backend);

  describe(`archive to S3 (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let service: Harness;
    let bucket: string;
    let location: string;
    let originals: Map<number, EventRow>;
    const stripeEvent = stripePaymentEvent('evt_s3_1', 'payment_intent.succeeded', 'pi_s3_1', { userId: 'u_s3', courseId: 'c_s3' });

    before(async () => {
      db = database as TestDatabase;
      service = await Harness.start(db.url);
      bucket = await s3.createBucket(backend);
      location = `s3://${bucket}/archive/webhooks`;
    });
    after(async () => {
      await service?.close();
      await db?.drop();
    });

    test('archives into the bucket under the prefix: the files, the manifest, each file checked and in its storage class', async () => {
      assert.equal((await service.post(stripeDelivery(stripeEvent))).status, 200);
      await service.waitUntilProcessed(1);
      await service.db
        .updateTable('webhook_events')
        .set({ created_at: daysAgo(95) })
        .execute();
      await seedOld(service, 'evt_s3_seed', 60);
      originals = new Map((await allRows(service)).map((r) => [Number(r.id), r]));
      assert.equal(originals.size, 61);

      const archive = openArchive(location, archiveSettings());
      const report = await new Archiver(service.inbox).runOnce({ archive, olderThanMs: NINETY_DAYS, eventsPerFile: 25, deleteBatchSize: 10 });
      assert.deepEqual([report.archived, report.kept, report.dir], [61, 0, location]);
      assert.deepEqual(await allRows(service), []);

      const manifest = await loadManifest(archive.storage, { create: false });
      assert.ok(manifest.parts.every((p) => p.state === 'complete' && p.events <= 25));
      const keys = await s3.keys(bucket);
      assert.deepEqual(
        keys,
        ['archive/webhooks/manifest.json', ...manifest.parts.map((p) => `archive/webhooks/${p.file}`)].sort(),
        'the files and the manifest, and no run marker left',
      );
      for (const part of manifest.parts) assert.equal(await s3.storageClass(bucket, `archive/webhooks/${part.file}`), 'STANDARD_IA', part.file);
      assert.equal(await s3.storageClass(bucket, 'archive/webhooks/manifest.json'), 'STANDARD', 'the manifest stays in the default class');

      const lines = await archivedLines(bucket, 'archive/webhooks', manifest);
      assert.equal(lines.size, 61);
      for (const [id, original] of originals) sameEvent(lines.get(id)!, original);
    });

    test('an archived key stays deduplicated: a redelivery is a duplicate', async () => {
      const before = await service.allCounts();
      const again = await service.post(stripeDelivery(stripeEvent));
      assert.deepEqual([again.status, again.body.outcome], [200, 'duplicate']);
      assert.deepEqual(await service.allCounts(), before);
    });

    test('search finds by event, payment and day; restore brings back every byte', async () => {
      const archive = openArchive(`${location}/`, archiveSettings());
      assert.deepEqual(
        (await searchArchive(archive, { event: 'evt_s3_1' }, providers)).map((m) => m.event.event_id),
        ['evt_s3_1'],
      );
      assert.deepEqual(
        (await searchArchive(archive, { payment: 'pi_s3_1' }, providers)).map((m) => m.event.event_id),
        ['evt_s3_1'],
      );
      const days = [...new Set((await loadManifest(archive.storage, { create: false })).parts.map((p) => p.day))];
      assert.equal(days.length, 3);
      let restored = 0;
      for (const day of days) restored += (await restoreFromArchive(service.inbox.store, archive, { day }, providers)).restored;
      assert.equal(restored, 61);
      const rows = new Map((await allRows(service)).map((r) => [Number(r.id), r]));
      for (const [id, original] of originals) sameEvent(rows.get(id)!, original);
      const twice = await restoreFromArchive(service.inbox.store, archive, { event: 'evt_s3_1' }, providers);
      assert.deepEqual([twice.restored, twice.present], [0, 1]);
      assert.equal((await service.post(stripeDelivery(stripeEvent))).body.outcome, 'duplicate', 'restored, still a duplicate');
      const again = await new Archiver(service.inbox).runOnce({ archive: openArchive(`s3://${bucket}/again`, archiveSettings()), olderThanMs: NINETY_DAYS });
      assert.equal(again.archived, 61, 'restored events archive again');
    });

    test('encrypted at rest in the bucket: sealed objects, and a restore through the key gives every byte back', async () => {
      await seedOld(service, 'evt_s3_sealed', 6);
      const sealedOriginals = (await allRows(service)).filter((r) => r.event_id.startsWith('evt_s3_sealed'));
      assert.equal(sealedOriginals.length, 6);
      const settings = archiveSettings({ ARCHIVE_ENCRYPTION_KEY: `k1:${randomBytes(32).toString('base64')}` });
      const archive = openArchive(`s3://${bucket}/sealed`, settings);
      assert.equal((await new Archiver(service.inbox).runOnce({ archive, olderThanMs: NINETY_DAYS })).archived, 6);
      const manifest = await loadManifest(archive.storage, { create: false });
      for (const part of manifest.parts) {
        assert.equal(part.keyId, 'k1');
        const stored = (await s3.get(bucket, `sealed/${part.file}`))!;
        assert.equal(stored.subarray(0, 4).toString('ascii'), 'WIAE', `${part.file} is sealed`);
        assert.ok(!stored.includes('evt_s3_sealed'), 'no event id in the clear');
      }
      await assert.rejects(
        restoreFromArchive(service.inbox.store, openArchive(`s3://${bucket}/sealed`, archiveSettings()), { event: 'evt_s3_sealed_0' }, providers),
        /encrypted with key id k1, which is not configured/,
      );
      for (const original of sealedOriginals) {
        assert.equal((await restoreFromArchive(service.inbox.store, archive, { event: original.event_id }, providers)).restored, 1);
      }
      const rows = new Map((await allRows(service)).map((r) => [r.id, r]));
      for (const original of sealedOriginals) sameEvent(rows.get(original.id)!, original);
      assert.equal((await new Archiver(service.inbox).runOnce({ archive, olderThanMs: NINETY_DAYS })).archived, 6, 'restored, they archive again, sealed');
    });

    test('a bucket that does not exist fails the run before anything is read or deleted, naming the bucket', async () => {
      await seedOld(service, 'evt_s3_nobucket', 5);
      const missing = `wi-missing-${randomBytes(4).toString('hex')}`;
      await assert.rejects(
        new Archiver(service.inbox).runOnce({ archive: openArchive(`s3://${missing}/archive`, archiveSettings()), olderThanMs: NINETY_DAYS }),
        new RegExp(`cannot write to the archive s3://${missing}/archive: the bucket "${missing}" does not exist \\(NoSuchBucket`),
      );
      assert.equal((await allRows(service)).length, 5, 'every row still in the database');
    });

    // s3rver checks the access key id, not the SigV4 signature: a wrong secret would pass there, an unknown key id is refused.
    test('refused credentials fail the run before anything is deleted, naming the S3 error', async () => {
      const keyId = process.env.AWS_ACCESS_KEY_ID;
      process.env.AWS_ACCESS_KEY_ID = 'AKIANOTAKEYOFOURS';
      try {
        await assert.rejects(
          new Archiver(service.inbox).runOnce({ archive: openArchive(`s3://${bucket}/refused`, archiveSettings()), olderThanMs: NINETY_DAYS }),
          /cannot write to the archive s3:\/\/wi-[\w-]+\/refused: the credentials were refused \(InvalidAccessKeyId/,
        );
      } finally {
        process.env.AWS_ACCESS_KEY_ID = keyId;
      }
      assert.equal((await allRows(service)).length, 5);
      assert.deepEqual(await s3.keys(bucket, 'refused/'), []);
    });

    test('a second run on the same location is refused while one holds it', async () => {
      const held = new OperationLock({ db: service.db, clock: service.inbox.clock, name: `archive:s3://${bucket}/locked`, owner: 'other-host:4242:0badcafe', ttlMs: 60_000 });
      assert.equal(await held.take(), null);
      try {
        await assert.rejects(
          new Archiver(service.inbox).runOnce({ archive: openArchive(`s3://${bucket}/locked`, archiveSettings()), olderThanMs: NINETY_DAYS }),
          /another archive run \(other-host:4242:0badcafe, .*\) is using s3:\/\/wi-[\w-]+\/locked/,
        );
      } finally {
        await held.release();
      }
      assert.equal((await allRows(service)).length, 5);
    });

    test('an upload refused half-way deletes none of its events; the next run finishes the job', async () => {
      await seedOld(service, 'evt_s3_refused', 45);
      const before = new Map((await allRows(service)).map((r) => [Number(r.id), r]));
      // The first file goes up; the second file's PUT is refused, as by a store failing mid-run.
      let filePuts = 0;
      const proxy = await startRefusingS3Proxy(s3.endpoint, (request) =>
        request.method === 'PUT' && /\.jsonl\.gz(\?|$)/.test(request.url ?? '') && ++filePuts >= 2 ? { status: 403, code: 'AccessDenied' } : null,
      );
      const archive = openArchive(`s3://${bucket}/half`, archiveSettings({ S3_ENDPOINT: proxy.endpoint }));
      try {
        await assert.rejects(
          new Archiver(service.inbox).runOnce({ archive, olderThanMs: NINETY_DAYS, eventsPerFile: 20 }),
          /writing \S+\.jsonl\.gz in s3:\/\/[\w-]+\/half failed: access to the bucket "[\w-]+" was denied to these credentials \(AccessDenied/,
        );
      } finally {
        await proxy.close();
      }
      assert.equal(proxy.refused.length, 1);
      const manifest = await loadManifest(openArchiveStorage(`s3://${bucket}/half`, archiveSettings()), { create: false });
      assert.equal(manifest.parts.length, 1, 'only the file that went up is listed');
      const left = await allRows(service);
      assert.equal(left.length, before.size - manifest.parts[0]!.events, "only the listed file's events left the database");
      const listed = await archivedLines(bucket, 'half', manifest);
      for (const id of before.keys()) assert.ok(listed.has(id) !== left.some((r) => Number(r.id) === id), `event ${id} is in exactly one place`);

      const rerun = await new Archiver(service.inbox).runOnce({
        archive: openArchive(`s3://${bucket}/half`, archiveSettings()),
        olderThanMs: NINETY_DAYS,
        eventsPerFile: 20,
      });
      assert.equal(rerun.archived, left.length);
      assert.equal((await allRows(service)).length, 0);
      const all = await archivedLines(bucket, 'half', await loadManifest(openArchiveStorage(`s3://${bucket}/half`, archiveSettings()), { create: false }));
      for (const [id, original] of before) sameEvent(all.get(id)!, original);
    });

    test('a multipart upload that fails on a part is aborted and deletes nothing', async () => {
      const BIG = 1400;
      // Random payloads do not compress: one file of these is over the upload part size.
      await seedOld(service, 'evt_s3_big', BIG, { days: 1, payload: () => JSON.stringify({ blob: randomBytes(4500).toString('base64') }) });
      const proxy = await startRefusingS3Proxy(s3.endpoint, (request) =>
        request.method === 'PUT' && /[?&]partNumber=2(&|$)/.test(request.url ?? '') ? { status: 403, code: 'AccessDenied' } : null,
      );
      try {
        await assert.rejects(
          new Archiver(service.inbox).runOnce({
            archive: openArchive(`s3://${bucket}/multipart`, archiveSettings({ S3_ENDPOINT: proxy.endpoint })),
            olderThanMs: NINETY_DAYS,
            eventsPerFile: 2000,
          }),
          /writing .*\.jsonl\.gz in s3:\/\/.*\/multipart failed/,
        );
      } finally {
        await proxy.close();
      }
      assert.ok(proxy.refused.length >= 1, 'a part was refused');
      assert.equal((await allRows(service)).length, BIG, 'every row still in the database');
      assert.deepEqual(
        (await s3.keys(bucket, 'multipart/')).filter((key) => key.endsWith('.gz')),
        [],
        'no partial file',
      );

      const rerun = await new Archiver(service.inbox).runOnce({
        archive: openArchive(`s3://${bucket}/multipart`, archiveSettings()),
        olderThanMs: NINETY_DAYS,
        eventsPerFile: 2000,
      });
      assert.equal(rerun.archived, BIG);
      assert.ok(rerun.parts[0]!.bytes > 5 * 1024 * 1024, `a multipart file (${rerun.parts[0]!.bytes} bytes)`);
    });

    test('the scheduled run archives to ARCHIVE_TO=s3://...', async () => {
      await seedOld(service, 'evt_s3_scheduled', 12);
      const settings = testConfig(db.url, { ...s3.env, ARCHIVE_TO: `s3://${bucket}/scheduled`, ARCHIVE_CRON: '* * * * * *' }).operations;
      const scheduled = scheduleOperations(settings, { inbox: service.inbox });
      try {
        await waitFor('the scheduled archive', async () => (await allRows(service)).length === 0, 20_000);
      } finally {
        await scheduled.stop();
      }
      const manifest = await loadManifest(openArchiveStorage(`s3://${bucket}/scheduled`, archiveSettings()), { create: false });
      assert.equal(
        manifest.parts.reduce((n, p) => n + p.events, 0),
        12,
      );
    });
  });
}

/** Every line of every file the manifest lists, read straight from the bucket, by event id. */
async function archivedLines(bucket: string, prefix: string, manifest: Manifest): Promise<Map<number, ArchivedEvent>> {
  const byId = new Map<number, ArchivedEvent>();
  for (const part of manifest.parts) {
    const bytes = await s3.get(bucket, `${prefix}/${part.file}`);
    assert.ok(bytes, `${part.file} is in the bucket`);
    for (const line of gunzipSync(bytes).toString('utf8').trimEnd().split('\n')) {
      const event = JSON.parse(line) as ArchivedEvent;
      byId.set(event.id, event);
    }
  }
  return byId;
}
