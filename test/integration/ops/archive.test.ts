import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Archiver } from '../../../src/ops/archive/archiver.js';
import { readArchiveLines, type ArchivedEvent } from '../../../src/ops/archive/files.js';
import { loadManifest } from '../../../src/ops/archive/manifest.js';
import { restoreFromArchive, searchArchive } from '../../../src/ops/archive/restore.js';
import { ProviderRegistry } from '../../../src/providers/registry.js';
import { selectEventRows, type EventRow } from '../../../src/db/event-rows.js';
import { toDbTime } from '../../../src/db/schema.js';
import { cli, exitOf, runCli } from '../../support/cli.js';
import { createTestDatabase, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { seedEvents } from '../../support/events.js';
import { Harness, paymentEffects, waitFor } from '../../support/harness.js';
import { payuDelivery, razorpayDelivery, stripeDelivery, stripePaymentEvent } from '../../support/signing.js';
import { openArchive, openArchiveStorage } from '../../../src/ops/archive/open-storage.js';
import { loadConfig } from '../../../src/config/load.js';

/** Archives in directories, unencrypted: the default settings (no ARCHIVE_ENCRYPTION_KEY; S3's unused). */
const ARCHIVE_SETTINGS = loadConfig({}).operations.archive;

const DAY_MS = 86_400_000;
const NINETY_DAYS = 90 * DAY_MS;
const providers = new ProviderRegistry({ stripe: null, razorpay: null, payu: null });

const daysAgo = (days: number, offsetMs = 0) => toDbTime(new Date(Date.now() - days * DAY_MS + offsetMs));

/** Payloads whose bytes a careless round trip would change: escapes, non-ASCII, odd whitespace. */
const TRICKY_PAYLOADS = [
  '{"id":"x","note":"caf\\u00e9 vs café","emoji":"🙂","rupee":"₹"}',
  '{\n  "pretty": true,\r\n  "tab":\t"x"\n}\n',
  '{"line_separator":"\u2028","quote":"\\"","backslash":"\\\\","big":12345678901234567890}',
  '{"empty":{},"list":[],"unicode_escape":"\\ud83d\\ude42"}',
];

async function allRows(harness: Harness) {
  return selectEventRows(harness.db).orderBy('id').execute();
}

/** Every line of every file the manifest lists, by event id. */
async function archivedEvents(dir: string): Promise<{ byId: Map<number, ArchivedEvent>; lines: number }> {
  const manifest = await loadManifest(openArchiveStorage(dir, ARCHIVE_SETTINGS), { create: false });
  const byId = new Map<number, ArchivedEvent>();
  let lines = 0;
  for (const part of manifest.parts) {
    for (const line of await readArchiveLines(openArchive(dir, ARCHIVE_SETTINGS), part)) {
      const event = JSON.parse(line) as ArchivedEvent;
      byId.set(event.id, event);
      lines++;
    }
  }
  return { byId, lines };
}

function sameEvent(archived: ArchivedEvent | EventRow, original: EventRow): void {
  assert.ok(Buffer.from(archived.payload, 'utf8').equals(Buffer.from(original.payload, 'utf8')), `payload bytes of ${original.event_id}`);
  for (const column of ['provider', 'event_id', 'event_type', 'status', 'attempts', 'outcome', 'last_error', 'created_at', 'processed_at', 'headers'] as const) {
    assert.equal(archived[column], original[column], `${column} of ${original.event_id}`);
  }
}

for (const backend of STORE_BACKENDS) {
  const databases = { roundTrip: await createTestDatabase(backend), interrupted: await createTestDatabase(backend) };

  describe(`archive -> verify -> delete -> restore (${backend})`, { skip: 'skip' in databases.roundTrip && databases.roundTrip.skip }, () => {
    let db: TestDatabase;
    let service: Harness;
    let dir: string;
    let originals: Map<number, EventRow>;
    const stripeEvent = stripePaymentEvent('evt_archived_1', 'payment_intent.succeeded', 'pi_archived_1', { userId: 'u_arch', courseId: 'c_arch' });
    const razorpayEvent = {
      entity: 'event',
      event: 'payment.captured',
      payload: { payment: { entity: { id: 'pay_archived_1', amount: 49900, currency: 'INR', status: 'captured', notes: { user_id: 'u_arch_rzp', course_id: 'c_arch' } } } },
    };

    before(async () => {
      db = databases.roundTrip as TestDatabase;
      service = await Harness.start(db.url);
      dir = await mkdtemp(join(tmpdir(), 'wi-archive-'));
    });
    after(async () => {
      await service?.close();
      await db?.drop();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    test('archives every processed event older than the cutoff, and nothing else', async () => {
      // Real deliveries through the pipeline, then aged past the cutoff.
      const deliveries = [
        stripeDelivery(stripeEvent),
        razorpayDelivery(razorpayEvent, 'rzp_evt_archived_1'),
        payuDelivery({
          mihpayid: '90000000001',
          status: 'success',
          txnid: 'txn_arch',
          amount: '499.00',
          productinfo: 'Course',
          firstname: 'Asha',
          email: 'asha@example.com',
          udf1: 'u_arch_payu',
          udf2: 'c_arch',
        }),
      ];
      for (const delivery of deliveries) assert.equal((await service.post(delivery)).status, 200);
      await service.waitUntilProcessed(3);
      await service.db
        .updateTable('webhook_events')
        .set({ created_at: daysAgo(95) })
        .execute();

      await seedEvents(
        service.db,
        Array.from({ length: 90 }, (_, i) => ({
          event_id: `evt_seed_${i}`,
          // Three days, 30 events each, out of id order within a day.
          created_at: daysAgo(100 + (i % 3), -i * 1000),
          payload: TRICKY_PAYLOADS[i % TRICKY_PAYLOADS.length]!,
          headers: JSON.stringify({ 'stripe-signature': `t=1,v1=${i}` }),
          outcome: i % 2 ? 'ignored: no business meaning: stripe x' : null,
          processed_at: daysAgo(100 + (i % 3), -i * 1000 + 50),
        })),
      );
      await seedEvents(service.db, [
        { event_id: 'evt_old_failed', status: 'failed', last_error: 'boom', created_at: daysAgo(120) },
        { event_id: 'evt_recent', created_at: daysAgo(10) },
      ]);
      // Failed attempts of an event that is archived (they go with it) and of one that stays.
      const attemptOf = async (eventId: string) => {
        const { id } = await service.db.selectFrom('webhook_events').select('id').where('event_id', '=', eventId).executeTakeFirstOrThrow();
        const at = daysAgo(120);
        await service.db
          .insertInto('event_attempts')
          .values({ event_row_id: id, attempt: 1, owner: 'w:1', outcome: 'failed', error: 'boom', started_at: at, ended_at: at })
          .execute();
        return id;
      };
      const archivedAttempt = await attemptOf('evt_archived_1');
      const keptAttempt = await attemptOf('evt_old_failed');
      const cutoff = toDbTime(new Date(Date.now() - NINETY_DAYS));
      originals = new Map((await allRows(service)).filter((r) => r.status === 'processed' && r.created_at < cutoff).map((r) => [Number(r.id), r]));
      assert.equal(originals.size, 93);

      const report = await new Archiver(service.inbox).runOnce({ archive: openArchive(dir, ARCHIVE_SETTINGS), olderThanMs: NINETY_DAYS, eventsPerFile: 25, deleteBatchSize: 10 });
      assert.equal(report.archived, 93);
      assert.equal(report.kept, 0);
      console.log(
        `archived ${report.archived} events into ${report.parts.length} files in ${report.elapsedMs} ms (${Math.round((report.archived * 1000) / Math.max(1, report.elapsedMs))} events/s)`,
      );

      const left = await allRows(service);
      assert.deepEqual(left.map((r) => r.event_id).sort(), ['evt_old_failed', 'evt_recent']);
      assert.equal((await service.db.selectFrom('archived_event_keys').select('id').execute()).length, 93);
      const attemptsLeft = await service.db.selectFrom('event_attempts').select('event_row_id').execute();
      assert.deepEqual(
        attemptsLeft.map((a) => Number(a.event_row_id)),
        [Number(keptAttempt)],
        `the attempts of archived event ${archivedAttempt} went with it`,
      );

      const manifest = await loadManifest(openArchiveStorage(dir, ARCHIVE_SETTINGS), { create: false });
      assert.ok(manifest.parts.every((p) => p.state === 'complete' && p.kept === 0 && p.file.startsWith(`${p.day}.`) && p.events <= 25));
      assert.equal(
        manifest.parts.reduce((n, p) => n + p.events, 0),
        93,
      );
      assert.equal(new Set(manifest.parts.map((p) => p.day)).size, 4, 'one series of files per day');
      assert.deepEqual((await readdir(dir)).filter((f) => f.endsWith('.gz')).sort(), manifest.parts.map((p) => p.file).sort());

      const { byId, lines } = await archivedEvents(dir);
      assert.equal(lines, 93);
      for (const [id, original] of originals) sameEvent(byId.get(id)!, original);
    });

    test('a second run archives nothing twice', async () => {
      const report = await new Archiver(service.inbox).runOnce({ archive: openArchive(dir, ARCHIVE_SETTINGS), olderThanMs: NINETY_DAYS });
      assert.equal(report.archived, 0);
      assert.deepEqual(report.parts, []);
      assert.equal((await archivedEvents(dir)).lines, 93);
    });

    test('a redelivery of an archived event is a duplicate: 200, not recorded or processed again', async () => {
      const before = await service.allCounts();
      const stripe = await service.post(stripeDelivery(stripeEvent));
      const razorpay = await service.post(razorpayDelivery(razorpayEvent, 'rzp_evt_archived_1'));
      assert.deepEqual([stripe.status, stripe.body.outcome], [200, 'duplicate']);
      assert.deepEqual([razorpay.status, razorpay.body.outcome], [200, 'duplicate']);
      await new Promise((resolve) => setTimeout(resolve, 300));
      assert.deepEqual(await service.allCounts(), before);
      assert.deepEqual(await paymentEffects(service.db, 'pi_archived_1'), { payments: 1, orders: 1, enrollments: 1, receipts: 1 });
    });

    test('search finds by event, payment and day without restoring', async () => {
      assert.deepEqual(
        (await searchArchive(openArchive(dir, ARCHIVE_SETTINGS), { event: 'evt_archived_1' }, providers)).map((m) => m.event.event_id),
        ['evt_archived_1'],
      );
      assert.deepEqual(
        (await searchArchive(openArchive(dir, ARCHIVE_SETTINGS), { payment: 'pay_archived_1' }, providers)).map((m) => m.event.event_id),
        ['rzp_evt_archived_1'],
      );
      assert.deepEqual(
        (await searchArchive(openArchive(dir, ARCHIVE_SETTINGS), { payment: 'txn_arch' }, providers)).map((m) => m.event.event_id),
        ['txn_arch:success'],
      );
      const day = (await loadManifest(openArchiveStorage(dir, ARCHIVE_SETTINGS), { create: false })).parts.find((p) => p.events === 25)!.day;
      assert.equal((await searchArchive(openArchive(dir, ARCHIVE_SETTINGS), { day }, providers)).length, 30);
      const counts = await service.allCounts();
      assert.deepEqual([counts.webhook_events, counts.webhook_event_bodies], [2, 2], 'nothing restored; the bodies of the archived events went with them');
      await assert.rejects(searchArchive(openArchive(dir, ARCHIVE_SETTINGS), { day: '01/05/2024' }, providers), /--day must be a date/);
      await assert.rejects(searchArchive(openArchive(dir, ARCHIVE_SETTINGS), { day: '2024-13-01' }, providers), /--day must be a date/, 'a month the calendar does not have');
    });

    test('restore brings back every column and every payload byte; restoring twice adds nothing', async () => {
      const days = [...new Set((await loadManifest(openArchiveStorage(dir, ARCHIVE_SETTINGS), { create: false })).parts.map((p) => p.day))];
      let restored = 0;
      for (const day of days) restored += (await restoreFromArchive(service.inbox.store, openArchive(dir, ARCHIVE_SETTINGS), { day }, providers)).restored;
      assert.equal(restored, 93);
      const rows = new Map((await allRows(service)).map((r) => [Number(r.id), r]));
      for (const [id, original] of originals) sameEvent(rows.get(id)!, original);

      const again = await restoreFromArchive(service.inbox.store, openArchive(dir, ARCHIVE_SETTINGS), { event: 'evt_archived_1' }, providers);
      assert.deepEqual([again.restored, again.present], [0, 1]);
    });

    // The commands' wiring is the same over both stores: checked once.
    if (backend === 'mysql')
      test('the CLI: archive search and restore', async () => {
        const env = { DATABASE_URL: db.url };
        const search = await cli(['archive', 'search', '--from', dir, '--payment', 'pi_archived_1'], env);
        assert.equal(search.code, 0, search.output);
        assert.match(search.output, /evt_archived_1 +payment_intent\.succeeded/);
        const restore = await cli(['restore', '--from', dir, '--event', 'evt_seed_1', '--payment', 'pi_x'], env);
        assert.equal(restore.code, 2, 'one query at a time');
        assert.match(restore.output, /option '--event <id>' cannot be used with option '--payment <id>'/);
      });
  });

  describe(`an archive run killed mid-way (${backend})`, { skip: 'skip' in databases.interrupted && databases.interrupted.skip }, () => {
    let db: TestDatabase;
    let service: Harness;
    let dir: string;
    const EVENTS = 3000;

    before(async () => {
      db = databases.interrupted as TestDatabase;
      service = await Harness.start(db.url);
      dir = await mkdtemp(join(tmpdir(), 'wi-archive-kill-'));
    });
    after(async () => {
      await service?.close();
      await db?.drop();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    test('loses nothing, resumes, and archives each event exactly once', async () => {
      await seedEvents(
        service.db,
        Array.from({ length: EVENTS }, (_, i) => ({
          event_id: `evt_bulk_${i}`,
          created_at: daysAgo(100 + (i % 2), i),
          payload: JSON.stringify({ id: `evt_bulk_${i}`, data: randomBytes(300).toString('base64'), note: 'ünïcødé ₹ 🙂' }),
        })),
      );
      const originals = new Map((await allRows(service)).map((r) => [Number(r.id), r]));
      const env = { DATABASE_URL: db.url };
      const args = ['archive', '--older-than', '90d', '--to', dir, '--events-per-file', '100', '--batch-size', '20'];

      const first = runCli(args, env);
      await waitFor(
        'the first files in the manifest',
        async () => {
          const text = await readFile(join(dir, 'manifest.json'), 'utf8').catch(() => '{"parts":[]}');
          return (JSON.parse(text) as { parts: unknown[] }).parts.length >= 3;
        },
        30_000,
      );
      first.kill('SIGKILL');
      await exitOf(first);
      assert.equal(first.signalCode, 'SIGKILL');

      const remaining = await allRows(service);
      assert.ok(remaining.length > 0 && remaining.length < EVENTS, `the run was interrupted mid-way (${remaining.length} rows left)`);
      const { byId } = await archivedEvents(dir);
      for (const id of originals.keys()) assert.ok(remaining.some((r) => Number(r.id) === id) || byId.has(id), `event ${id} is in the database or in a listed file`);

      const second = await cli([...args, '--json'], env);
      assert.equal(second.code, 0, second.output);
      assert.equal((JSON.parse(second.output) as { kept: number }).kept, 0);
      assert.equal((await allRows(service)).length, 0);

      const archived = await archivedEvents(dir);
      assert.equal(archived.lines, EVENTS, 'no event written to two files');
      for (const [id, original] of originals) sameEvent(archived.byId.get(id)!, original);
      assert.equal((await service.db.selectFrom('archived_event_keys').select('id').execute()).length, EVENTS);

      const third = await new Archiver(service.inbox).runOnce({ archive: openArchive(dir, ARCHIVE_SETTINGS), olderThanMs: NINETY_DAYS });
      assert.equal(third.archived, 0);
    });
  });
}
