import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import { systemClock } from '../../../src/clock.js';
import { toDbTime } from '../../../src/db/schema.js';
import type { ArchiveKey } from '../../../src/config/settings.js';
import { loadConfig } from '../../../src/config/load.js';
import { Archiver } from '../../../src/ops/archive/archiver.js';
import { sha256Hex } from '../../../src/ops/archive/files.js';
import { loadManifest, saveManifest } from '../../../src/ops/archive/manifest.js';
import { openArchive, openArchiveStorage } from '../../../src/ops/archive/open-storage.js';
import { rekeyArchive } from '../../../src/ops/archive/rekey.js';
import { restoreFromArchive, searchArchive } from '../../../src/ops/archive/restore.js';
import { ProviderRegistry } from '../../../src/providers/registry.js';
import { openStore } from '../../../src/store/open-store.js';
import type { KyselyInboxStore } from '../../../src/store/kysely-store.js';
import { createTestDatabase, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { seedEvents } from '../../support/events.js';

const key = (id: string): ArchiveKey => ({ id, secret: randomBytes(32).toString('base64') });
const K1 = key('k1');
const K2 = key('k2');
/** The archive settings with these ARCHIVE_ENCRYPTION_KEY keys (S3's defaults, unused in a directory). */
const withKeys = (...keys: ArchiveKey[]) => ({ ...loadConfig({}).operations.archive, keys });
const providers = new ProviderRegistry({ stripe: null, razorpay: null, payu: null });
const longAgo = (offsetMs: number) => toDbTime(new Date(Date.now() - 200 * 86_400_000 + offsetMs));
/** A payload a careless round trip would change, naming a person the archive must not show in the clear. */
const payloadOf = (i: number) => `{"id":"evt_enc_${i}","data":{"object":{"receipt_email":"asha.${i}@example.com","name":"Åsa \\u00e9 ${i}"}},  "n":${i}}`;

for (const backend of STORE_BACKENDS) {
  const database = await createTestDatabase(backend);
  describe(`archive encryption at rest (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let store: KyselyInboxStore;
    let dir: string;
    const inbox = () => ({ database: store.db, store, clock: systemClock });
    const count = async () =>
      Number(
        (
          await store.db
            .selectFrom('webhook_events')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );

    before(async () => {
      store = openStore((database as TestDatabase).url, { poolSize: 2, clock: systemClock });
      await store.migrate();
      dir = await mkdtemp(join(tmpdir(), 'wi-archive-enc-'));
      await seedEvents(
        store.db,
        Array.from({ length: 30 }, (_, i) => ({ event_id: `evt_enc_${i}`, created_at: longAgo(i * 1000), payload: payloadOf(i), outcome: 'ignored: no business meaning' })),
      );
    });
    after(async () => {
      await store?.close();
      await (database as TestDatabase).drop();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    test('with a key, every file is sealed (no person in the clear), its key id in its header and the manifest', async () => {
      const report = await new Archiver(inbox()).runOnce({ archive: openArchive(dir, withKeys(K1)), olderThanMs: 90 * 86_400_000, eventsPerFile: 10 });
      assert.equal(report.archived, 30);
      assert.equal(await count(), 0);
      const manifest = await loadManifest(openArchiveStorage(dir, withKeys()), { create: false });
      assert.equal(manifest.parts.length, 3);
      for (const part of manifest.parts) {
        assert.equal(part.keyId, 'k1');
        const stored = await readFile(join(dir, part.file));
        assert.equal(stored.subarray(0, 4).toString('ascii'), 'WIAE');
        assert.doesNotMatch(stored.toString('latin1'), /example\.com|evt_enc/);
        assert.throws(() => gunzipSync(stored), 'not a gzip file in the clear');
      }
    });

    test('restore opens them byte for byte; without the key it names the key id the file needs and restores nothing', async () => {
      await assert.rejects(
        restoreFromArchive(store, openArchive(dir, withKeys(K2)), { event: 'evt_enc_3' }, providers),
        /encrypted with key id k1, which is not configured \(ARCHIVE_ENCRYPTION_KEY lists k2\)/,
      );
      await assert.rejects(searchArchive(openArchive(dir, withKeys()), { day: longAgo(0).slice(0, 10) }, providers), /key id k1.*ARCHIVE_ENCRYPTION_KEY is not set/);
      assert.equal(await count(), 0);
      const restored = await restoreFromArchive(store, openArchive(dir, withKeys(K1)), { event: 'evt_enc_3' }, providers);
      assert.equal(restored.restored, 1);
      const body = await store.db
        .selectFrom('webhook_events')
        .innerJoin('webhook_event_bodies', 'event_row_id', 'webhook_events.id')
        .select('payload')
        .where('event_id', '=', 'evt_enc_3')
        .executeTakeFirstOrThrow();
      assert.equal(body.payload, payloadOf(3));
    });

    test('a file altered behind its checksum fails authentication, named, and nothing of it is restored', async () => {
      const storage = openArchiveStorage(dir, withKeys());
      const manifest = await loadManifest(storage, { create: false });
      const part = manifest.parts[0]!;
      const copy = join(dir, `${part.file}.orig`);
      const original = await readFile(join(dir, part.file));
      await writeFile(copy, original);
      const altered = Buffer.from(original);
      altered[altered.length - 40]! ^= 1;
      await writeFile(join(dir, part.file), altered);
      await assert.rejects(
        restoreFromArchive(store, openArchive(dir, withKeys(K1)), { day: part.day }, providers),
        new RegExp(`${part.file} in .* does not match its manifest checksum`),
      );
      // The same bytes with a checksum to match: only the authentication can refuse them.
      const sha256 = part.sha256;
      part.sha256 = sha256Hex(altered);
      await saveManifest(storage, manifest);
      const before = await count();
      await assert.rejects(
        restoreFromArchive(store, openArchive(dir, withKeys(K1)), { day: part.day }, providers),
        new RegExp(`${part.file} in .* fails authentication under key id k1`),
      );
      assert.equal(await count(), before);
      part.sha256 = sha256;
      await saveManifest(storage, manifest);
      await writeFile(join(dir, part.file), original);
      await rm(copy);
    });

    test('rekey seals every file under the first key; the old key is no longer needed, nor its files kept', async () => {
      const report = await rekeyArchive(inbox(), openArchive(dir, withKeys(K2, K1)));
      assert.equal(report.keyId, 'k2');
      assert.equal(report.rekeyed.length, 3);
      assert.ok(report.rekeyed.every((r) => r.previousKeyId === 'k1' && r.to.endsWith('.k2.jsonl.gz')));
      const manifest = await loadManifest(openArchiveStorage(dir, withKeys()), { create: false });
      assert.ok(manifest.parts.every((p) => p.keyId === 'k2'));
      assert.deepEqual((await readdir(dir)).filter((f) => f.endsWith('.gz')).sort(), manifest.parts.map((p) => p.file).sort(), 'the files under k1 are gone');
      const found = await searchArchive(openArchive(dir, withKeys(K2)), { event: 'evt_enc_7' }, providers);
      assert.equal(found[0]?.event.payload, payloadOf(7));
      assert.equal((await rekeyArchive(inbox(), openArchive(dir, withKeys(K2)))).current, 3, 'a second run has nothing to do');
      await assert.rejects(rekeyArchive(inbox(), openArchive(dir, withKeys())), /ARCHIVE_ENCRYPTION_KEY, which is not set/);
    });
  });
}

describe('an archive written without a key', () => {
  test('is encrypted by rekey, and reads the same after', async () => {
    const database = await createTestDatabase('sqlite');
    const store = openStore((database as TestDatabase).url, { poolSize: 1, clock: systemClock });
    const dir = await mkdtemp(join(tmpdir(), 'wi-archive-plain-'));
    try {
      await store.migrate();
      await seedEvents(store.db, [{ event_id: 'evt_plain', created_at: longAgo(0), payload: payloadOf(99) }]);
      await new Archiver({ database: store.db, store, clock: systemClock }).runOnce({ archive: openArchive(dir, withKeys()), olderThanMs: 86_400_000 });
      const part = (await loadManifest(openArchiveStorage(dir, withKeys()), { create: false })).parts[0]!;
      assert.equal(part.keyId, undefined);
      assert.match(gunzipSync(await readFile(join(dir, part.file))).toString('utf8'), /evt_plain/);
      const report = await rekeyArchive({ database: store.db, clock: systemClock }, openArchive(dir, withKeys(K1)));
      assert.deepEqual(
        report.rekeyed.map((r) => r.previousKeyId),
        [null],
      );
      const found = await searchArchive(openArchive(dir, withKeys(K1)), { event: 'evt_plain' }, providers);
      assert.equal(found[0]?.event.payload, payloadOf(99));
    } finally {
      await store.close();
      await (database as TestDatabase).drop();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
