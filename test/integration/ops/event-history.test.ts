import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Archiver } from '../../../src/ops/archive/archiver.js';
import { restoreFromArchive } from '../../../src/ops/archive/restore.js';
import { ProviderRegistry } from '../../../src/providers/registry.js';
import { ADMIN, ADMIN_ENV } from '../../support/admin.js';
import { cli } from '../../support/cli.js';
import { describeEachService } from '../../support/store-suite.js';
import { TEST_SECRETS, stripeDelivery, stripePaymentEvent } from '../../support/signing.js';
import { openArchive } from '../../../src/ops/archive/open-storage.js';
import { loadConfig } from '../../../src/config/load.js';

/** Archives in directories, unencrypted: the default settings (no ARCHIVE_ENCRYPTION_KEY; S3's unused). */
const ARCHIVE_SETTINGS = loadConfig({}).operations.archive;

interface ProcessingJson {
  outcome: string;
  processedAt: string;
  startedAt: string | null;
  attempt: number;
  worker: string | null;
  replay: { actor: string; reason: string; requestedAt: string } | null;
}

const FIRST = 'applied: payment pi_history captured';
const AGAIN = 'ignored: payment already captured';

/** The cells of each row of the page's timeline table, as text. */
function timelineRows(page: string): string[][] {
  const table = /<table class="timeline">([\s\S]*?)<\/table>/.exec(page)?.[1] ?? '';
  return [...table.matchAll(/<tr>([\s\S]*?)<\/tr>/g)].map((row) => [...row[1]!.matchAll(/<td[^>]*>([\s\S]*?)<\/td>/g)].map((cell) => cell[1]!.trim()));
}

await describeEachService('every processing of an event is kept through replays, archive and restore', ADMIN_ENV, (suite) => {
  const cliEnv = () => ({ DATABASE_URL: suite.database.url, STRIPE_WEBHOOK_SECRET: TEST_SECRETS.stripe });
  const api = async (path: string, init: { method?: string; body?: unknown; token?: string } = {}) => {
    const response = await fetch(`${suite.service.url}${path}`, {
      method: init.method ?? 'GET',
      headers: { authorization: `Bearer ${init.token ?? ADMIN.viewer}`, ...(init.body === undefined ? {} : { 'content-type': 'application/json' }) },
      body: init.body === undefined ? undefined : JSON.stringify(init.body),
    });
    return { status: response.status, text: await response.text() };
  };
  const detailOf = async (id: number) => JSON.parse((await api(`/admin/api/events/${id}`)).text) as Record<string, unknown> & { processings: ProcessingJson[] };
  let id: number;

  test('processed, replayed from the dashboard and from the CLI: the API, the page and events show give all three processings', async () => {
    const { service } = suite;
    assert.equal((await service.post(stripeDelivery(stripePaymentEvent('evt_history', 'payment_intent.succeeded', 'pi_history')))).status, 200);
    await service.waitUntilProcessed(1);
    id = (await service.db.selectFrom('webhook_events').select('id').where('event_id', '=', 'evt_history').executeTakeFirstOrThrow()).id;

    const replayed = await api(`/admin/api/events/${id}/replay`, { method: 'POST', token: ADMIN.operator, body: { dryRun: false, reason: 'dashboard check' } });
    assert.equal(replayed.status, 200, replayed.text);
    assert.equal((JSON.parse(replayed.text) as { detail: string }).detail, AGAIN);
    const fromCli = await cli(['replay', 'evt_history', '--reason', 'cli check', '--actor', 'bob'], cliEnv());
    assert.equal(fromCli.code, 0, fromCli.output);

    const detail = await detailOf(id);
    const processings = detail.processings;
    assert.deepEqual(
      processings.map((p) => [p.outcome, p.replay?.actor ?? null, p.replay?.reason ?? null]),
      [
        [FIRST, null, null],
        [AGAIN, 'alice', 'dashboard check'],
        [AGAIN, 'bob', 'cli check'],
      ],
    );
    for (const [n, p] of processings.entries()) {
      assert.match(p.worker ?? '', /^[^:]+:\d+:[0-9a-f]{8}$/, 'the worker that processed it');
      assert.equal(p.attempt, 1);
      if (n > 0) assert.ok(processings[n - 1]!.processedAt < p.replay!.requestedAt && p.replay!.requestedAt < p.processedAt, 'each after the replay that asked for it');
    }
    assert.equal(detail.outcome, AGAIN, 'the latest outcome, as before');
    assert.deepEqual(
      (detail.attemptLog as Array<{ outcome: string; endedAt: string }>).map((a) => [a.outcome, a.endedAt]),
      processings.map((p) => ['processed', p.processedAt]),
      'the attempt of each processing',
    );
    const timeline = detail.timeline as Array<{ at: string; what: string; detail: string | null }>;
    assert.deepEqual(
      timeline.filter((t) => t.what === 'processed').map((t) => [t.at, t.detail]),
      processings.map((p) => [p.processedAt, p.outcome]),
    );

    const page = await api(`/admin/events/${id}`);
    assert.equal(page.status, 200);
    const processedRows = timelineRows(page.text).filter((cells) => cells[2] === 'processed');
    assert.deepEqual(
      processedRows.map((cells) => [cells[0], cells[4]]),
      processings.map((p) => [p.processedAt.replace('T', ' ').replace(/\.\d+Z$/, ''), p.outcome]),
      'the page shows each processing at its time',
    );

    const shown = await cli(['events', 'show', 'evt_history', '--json'], cliEnv());
    assert.equal(shown.code, 0, shown.output);
    assert.deepEqual((JSON.parse(shown.output) as { processings: ProcessingJson[] }).processings, processings);
    const text = await cli(['events', 'show', String(id)], cliEnv());
    assert.equal(text.code, 0, text.output);
    const lines = text.output.slice(text.output.indexOf('processings, oldest first:')).split('\n');
    for (const [n, p] of processings.entries()) {
      const time = p.processedAt.replace('T', ' ').replace('Z', '');
      assert.match(lines[n + 2] ?? '', new RegExp(`^${n + 1} +${time} +${p.replay ? `${p.replay.actor} +${p.replay.reason}` : '- +-'} +${p.outcome}$`), text.output);
    }
  });

  test('archived and restored, the event shows every processing again', async () => {
    const before = (await detailOf(id)).processings;
    const dir = await mkdtemp(join(tmpdir(), 'wi-history-'));
    try {
      const archived = await new Archiver(suite.service.inbox).runOnce({ archive: openArchive(dir, ARCHIVE_SETTINGS), olderThanMs: 0 });
      assert.equal(archived.archived, 1);
      assert.equal((await api(`/admin/api/events/${id}`)).status, 404, 'gone from the database');
      const restored = await restoreFromArchive(
        suite.service.inbox.store,
        openArchive(dir, ARCHIVE_SETTINGS),
        { event: 'evt_history' },
        new ProviderRegistry({ stripe: null, razorpay: null, payu: null }),
      );
      assert.equal(restored.restored, 1);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    // The archive keeps no claim time or worker of the row's own processing; everything else is as it was.
    const after = (await detailOf(id)).processings;
    assert.deepEqual(after.slice(0, 2), before.slice(0, 2));
    assert.deepEqual(after[2], { ...before[2]!, startedAt: null, worker: null });
  });
});
