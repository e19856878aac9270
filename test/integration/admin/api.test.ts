import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { DeliveryStatsRecorder } from '../../../src/observability/delivery-stats.js';
import { loadConfig } from '../../../src/config/load.js';
import { ADMIN, ADMIN_ENV, FLAKY_ERROR, startAdminService, type AdminServiceState } from '../../support/admin.js';
import { createTestDatabase, createTestDatabases, STORE_BACKENDS, type TestDatabase } from '../../support/database.js';
import { Harness } from '../../support/harness.js';
import { stripeDelivery, stripePaymentEvent } from '../../support/signing.js';
import { coursePlatform } from '../../../src/course-platform/course-platform.js';
import { toDbTime } from '../../../src/db/schema.js';
import { selectEventRows } from '../../../src/db/event-rows.js';

const databases = await createTestDatabases();
const PAID = 5;
const FAILING = 3;

interface Answer {
  status: number;
  headers: Headers;
  text: string;
  json: Record<string, unknown>;
}

for (const backend of STORE_BACKENDS) {
  const database = databases[backend];
  describe(`admin API (${backend})`, { skip: 'skip' in database && database.skip }, () => {
    let db: TestDatabase;
    let service: Harness;
    let state: AdminServiceState;

    const call = async (method: string, path: string, options: { token?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Answer> => {
      const headers: Record<string, string> = { ...options.headers };
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      if (options.body !== undefined) headers['content-type'] = 'application/json';
      const response = await fetch(`${service.url}${path}`, { method, headers, body: options.body === undefined ? undefined : JSON.stringify(options.body), redirect: 'manual' });
      const text = await response.text();
      let json: Record<string, unknown> = {};
      try {
        json = JSON.parse(text) as Record<string, unknown>;
      } catch {
        // A page, not JSON.
      }
      return { status: response.status, headers: response.headers, text, json };
    };
    const get = (path: string, token = ADMIN.viewer) => call('GET', path, { token });
    const events = (answer: Answer) => answer.json.events as Array<Record<string, unknown>>;

    before(async () => {
      db = database as TestDatabase;
      ({ service, state } = await startAdminService(db.url, { paid: PAID, failing: FAILING }, 'api'));
    });
    after(async () => {
      await service?.close();
      await db?.drop();
    });

    test('without a credential: 401 on the API, a redirect to sign-in on pages, nothing revealed', async () => {
      for (const path of [
        '/admin/api/events',
        '/admin/api/events/1',
        '/admin/api/payments/stripe/pi_api_paid_0',
        '/admin/api/overview',
        '/admin/api/openapi.json',
        '/admin/api/outbox',
        '/admin/api/audit',
        '/admin/api/rejections',
        '/admin/api/stuck',
        '/admin/api/reconcile/runs',
        '/admin/api/bulk-replays',
        // The router decodes the path: an encoded one is the same API route, and answers as one.
        '/%61dmin/api/events',
        '/admin/%61pi/events',
      ]) {
        for (const token of [undefined, 'wrong-token-0123456789abcdef0123456789abcdef']) {
          const answer = await call('GET', path, { token });
          assert.equal(answer.status, 401, path);
          assert.doesNotMatch(answer.text, /pi_api|evt_api/, `${path} leaks nothing`);
        }
      }
      for (const path of [
        '/admin',
        '/admin/events',
        '/admin/events/1',
        '/admin/payments/stripe/pi_api_paid_0',
        '/admin/outbox',
        '/admin/problems',
        '/admin/audit',
        '/admin/reconcile',
      ]) {
        const answer = await call('GET', path);
        assert.equal(answer.status, 303, path);
        assert.equal(answer.headers.get('location'), '/admin/sign-in');
        assert.doesNotMatch(answer.text, /pi_api|evt_api/);
      }
      const replay = await call('POST', '/admin/api/events/1/replay', { body: { dryRun: false, reason: 'x' } });
      assert.equal(replay.status, 401);
      const forged = await call('GET', '/admin/api/events', { headers: { cookie: 'wi_admin=alice|99999999999999.forged' } });
      assert.equal(forged.status, 401, 'an unsigned cookie is no session');
    });

    test('every admin answer carries the CSP, no framing, no caching', async () => {
      for (const answer of [await get('/admin/api/events'), await call('GET', '/admin/sign-in'), await call('GET', '/admin/api/events')]) {
        assert.match(answer.headers.get('content-security-policy') ?? '', /default-src 'none'; script-src 'self'/);
        assert.equal(answer.headers.get('x-frame-options'), 'DENY');
        assert.equal(answer.headers.get('cache-control'), 'no-store');
      }
    });

    test('the list: newest first, filtered, keyset pages that cover every event once', async () => {
      const all = events(await get('/admin/api/events'));
      assert.equal(all.length, PAID + FAILING);
      assert.deepEqual(Object.keys(all[0]!).slice(0, 7), ['id', 'provider', 'eventId', 'type', 'status', 'paymentId', 'receivedAt']);
      assert.equal(all[0]!.eventId, `evt_api_failing_${FAILING - 1}`, 'newest first');

      const seen: unknown[] = [];
      let cursor: string | null = null;
      do {
        const page: Answer = await get(`/admin/api/events?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(page.status, 200);
        seen.push(...events(page).map((e) => e.id));
        cursor = page.json.nextCursor as string | null;
      } while (cursor);
      assert.deepEqual(
        seen,
        all.map((e) => e.id),
        'the pages, in turn, are the whole list',
      );

      assert.equal(events(await get('/admin/api/events?status=failed')).length, FAILING);
      assert.deepEqual(
        events(await get('/admin/api/events?paymentId=pi_api_paid_2')).map((e) => e.eventId),
        ['evt_api_paid_2'],
      );
      assert.deepEqual(
        events(await get('/admin/api/events?eventId=evt_api_paid_3&provider=stripe')).map((e) => e.paymentId),
        ['pi_api_paid_3'],
      );
      assert.equal(events(await get('/admin/api/events?type=payment_intent.succeeded&provider=razorpay')).length, 0);
      assert.equal(events(await get('/admin/api/events?from=2000-01-01&to=2000-01-02')).length, 0);
      assert.deepEqual(
        events(await get('/admin/api/events?q=onerror')).map((e) => e.eventId),
        ['evt_api_paid_0'],
        'text search within the default window',
      );
    });

    test('bad filters: 400 naming the parameter', async () => {
      const cases: Array<[string, string]> = [
        ['status=bogus', 'status'],
        ['provider=paypal', 'provider'],
        ['limit=0', 'limit'],
        ['limit=1000', 'limit'],
        ['limit=abc', 'limit'],
        ['from=yesterday', 'from'],
        ['to=2026-13-45', 'to'],
        ['from=2026-12-02&to=2026-12-01', 'to'],
        ['cursor=garbage', 'cursor'],
        ['q=ab', 'q'],
        ['q=card&from=2026-01-01&to=2026-12-01', 'q'],
        ['status=failed&status=processed', 'status'],
      ];
      for (const [query, parameter] of cases) {
        const answer = await get(`/admin/api/events?${query}`);
        assert.equal(answer.status, 400, query);
        assert.match(String(answer.json.message), new RegExp(`(^|/)${parameter}\\b`), query);
      }
      assert.equal((await get('/admin/api/events/abc')).status, 400);
      assert.equal((await get('/admin/api/events/999999')).status, 404);
      assert.equal((await get('/admin/api/payments/stripe/pi_nobody')).status, 404);
      assert.equal((await get('/admin/api/payments/paypal/pi_api_paid_0')).status, 400);
    });

    test('event detail: payload as received, headers without the signature, timeline, payment, outbox', async () => {
      const [row] = events(await get('/admin/api/events?eventId=evt_api_paid_0'));
      const detail = (await get(`/admin/api/events/${String(row!.id)}`)).json;
      const stored = await selectEventRows(service.db)
        .where('id', '=', row!.id as number)
        .executeTakeFirstOrThrow();
      assert.equal(detail.payload, stored.payload);
      assert.match(String(detail.payloadPretty), /\n {2}"id": "evt_api_paid_0"/);
      assert.deepEqual(Object.keys(detail.headers as object), ['content-type']);
      assert.equal((detail.payment as { status: string }).status, 'captured');
      assert.ok((detail.outbox as unknown[]).length >= 1, 'its receipt');
      assert.deepEqual(
        (detail.timeline as Array<{ what: string }>).map((t) => t.what),
        ['received', 'attempt 1: processed', 'processed'],
      );
      const payment = (await get('/admin/api/payments/stripe/pi_api_paid_0')).json;
      assert.deepEqual(
        (payment.events as Array<{ eventId: string }>).map((e) => e.eventId),
        ['evt_api_paid_0'],
      );
    });

    test('replay: a viewer is refused, a dry run names the change, a replay needs a reason and is audited', async () => {
      const [failed] = events(await get('/admin/api/events?status=failed&limit=1'));
      const path = `/admin/api/events/${String(failed!.id)}/replay`;
      assert.equal((await call('POST', path, { token: ADMIN.viewer, body: { dryRun: false, reason: 'try' } })).status, 403);
      const dry = await call('POST', path, { token: ADMIN.viewer, body: { dryRun: true } });
      assert.equal(dry.status, 200);
      assert.equal(dry.json.result, 'would_replay');
      assert.match(String(dry.json.transition), /^payment pi_api_failing_\d: new -> captured$/);
      const noReason = await call('POST', path, { token: ADMIN.operator, body: { dryRun: false } });
      assert.equal(noReason.status, 400);
      assert.match(String(noReason.json.message), /^reason: /);
      assert.equal((await call('POST', path, { token: ADMIN.operator, body: { dryRun: 'perhaps' } })).status, 400);

      const replayed = await call('POST', path, { token: ADMIN.operator, body: { dryRun: false, reason: 'fulfilment is back' } });
      assert.equal(replayed.status, 200);
      assert.equal(replayed.json.result, 'failed', 'the handler still fails: the replay ran and says so');
      const audit = (await get('/admin/api/audit')).json.actions as Array<Record<string, unknown>>;
      assert.deepEqual(
        { actor: audit[0]!.actor, role: audit[0]!.role, action: audit[0]!.action, target: audit[0]!.target, reason: audit[0]!.reason },
        { actor: 'alice', role: 'operator', action: 'replay', target: `event ${String(failed!.id)}`, reason: 'fulfilment is back' },
      );
      const detail = (await get(`/admin/api/events/${String(failed!.id)}`)).json;
      assert.ok(
        (detail.timeline as Array<{ what: string; by: string; detail: string }>).some(
          (t) => t.what === 'replay' && t.by === 'alice' && t.detail === 'fulfilment is back (before: failed after 1 attempt)',
        ),
      );
    });

    test('bulk replay: count first, then run with progress to the end; a changed count starts nothing', async () => {
      const filter = { status: 'failed', provider: 'stripe' };
      const count = await call('POST', '/admin/api/bulk-replays/count', { token: ADMIN.operator, body: filter });
      assert.deepEqual(count.json, { count: FAILING });
      assert.equal((await call('POST', '/admin/api/bulk-replays/count', { token: ADMIN.operator, body: { status: 'received' } })).status, 400);
      assert.equal((await call('POST', '/admin/api/bulk-replays', { token: ADMIN.viewer, body: { ...filter, reason: 'r', expectedCount: FAILING } })).status, 403);
      const stale = await call('POST', '/admin/api/bulk-replays', { token: ADMIN.operator, body: { ...filter, reason: 'r', expectedCount: FAILING + 1 } });
      assert.equal(stale.status, 400);
      assert.match(String(stale.json.message), /^expectedCount: /);
      const started = await call('POST', '/admin/api/bulk-replays', { token: ADMIN.operator, body: { ...filter, reason: 'bulk after outage', expectedCount: FAILING } });
      assert.equal(started.status, 202);
      let job: Record<string, unknown> = started.json;
      await service.waitFor('the bulk replay to finish', async () => {
        job = (await get(`/admin/api/bulk-replays/${String(started.json.id)}`)).json;
        return job.state !== 'running';
      });
      assert.equal(job.state, 'finished');
      assert.equal(job.done, FAILING);
      const actions = ((await get('/admin/api/audit')).json.actions as Array<{ action: string }>).map((a) => a.action);
      assert.ok(actions.includes('bulk_replay_started') && actions.includes('bulk_replay_finished'));
    });

    test('outbox: rows by status, retry of a skipped row (operator only, audited)', async () => {
      const skipped = (await get('/admin/api/outbox?status=skipped')).json.rows as Array<{ id: number; status: string }>;
      assert.ok(skipped.length > 0, 'receipts are skipped without SMTP');
      assert.ok(skipped.every((row) => row.status === 'skipped'));
      assert.equal((await get('/admin/api/outbox?status=lost')).status, 400);
      const path = `/admin/api/outbox/${skipped[0]!.id}/retry`;
      assert.equal((await call('POST', path, { token: ADMIN.viewer, body: { reason: 'resend' } })).status, 403);
      const retried = await call('POST', path, { token: ADMIN.operator, body: { reason: 'SMTP configured now' } });
      assert.equal(retried.status, 200);
      const audit = (await get('/admin/api/audit')).json.actions as Array<Record<string, unknown>>;
      assert.equal(audit[0]!.action, 'outbox_retry');
      assert.equal(audit[0]!.target, `outbox ${skipped[0]!.id}`);
    });

    test('a session cookie from the sign-in form: state changes need our Origin or the CSRF token', async () => {
      const wrong = await fetch(`${service.url}/admin/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'token=not-a-token',
        redirect: 'manual',
      });
      assert.equal(wrong.status, 401);
      const signIn = await fetch(`${service.url}/admin/sign-in`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: ADMIN.operator }).toString(),
        redirect: 'manual',
      });
      assert.equal(signIn.status, 303);
      const setCookie = signIn.headers.get('set-cookie') ?? '';
      assert.match(setCookie, /HttpOnly/);
      assert.match(setCookie, /SameSite=Strict/);
      assert.match(setCookie, /Path=\/admin/);
      const cookie = setCookie.split(';')[0]!;
      assert.equal((await call('GET', '/admin/api/me', { headers: { cookie } })).json.name, 'alice');

      const [failed] = events(await get('/admin/api/events?status=failed&limit=1'));
      const path = `/admin/api/events/${Number(failed?.id ?? 1)}/replay`;
      const body = { dryRun: true };
      assert.equal((await call('POST', path, { headers: { cookie, origin: 'https://evil.example' }, body })).status, 403, 'a foreign Origin');
      assert.equal((await call('POST', path, { headers: { cookie }, body })).status, 403, 'no Origin and no token');
      assert.equal((await call('POST', path, { headers: { cookie, origin: service.url }, body })).status, 200, 'our own Origin');
      const page = await (await fetch(`${service.url}/admin/outbox`, { headers: { cookie } })).text();
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page)?.[1];
      assert.ok(csrf);
      assert.equal((await call('POST', path, { headers: { cookie, 'x-csrf-token': csrf }, body })).status, 200, 'the session token');
      assert.equal((await call('POST', path, { headers: { cookie, 'x-csrf-token': `${csrf.slice(1)}x` }, body })).status, 403);
    });

    test('a refused delivery is listed with its reason, never its body or signature', async () => {
      const forged = await service.request(
        'POST',
        '/webhooks/stripe',
        { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=deadbeef' },
        '{"secret_body":"<script>x</script>"}',
      );
      assert.equal(forged.status, 401);
      if (service.inbox.metrics instanceof DeliveryStatsRecorder) await service.inbox.metrics.flush();
      const { recentRejections } = (await get('/admin/api/overview')).json as { recentRejections: Array<Record<string, unknown>> };
      assert.equal(recentRejections[0]?.provider, 'stripe');
      assert.equal(recentRejections[0]?.statusCode, 401);
      assert.equal(recentRejections[0]?.bodyBytes, 36);
      assert.doesNotMatch(JSON.stringify(recentRejections), /secret_body|deadbeef/);
      const listed = (await get('/admin/api/rejections')).json.rejections as Array<Record<string, unknown>>;
      assert.deepEqual(listed[0], recentRejections[0]);
    });

    test('overview counts deliveries from the database; OpenAPI describes the API', async () => {
      let overview: Record<string, unknown> = {};
      await service.waitFor(
        'the delivery stats to be written',
        async () => {
          overview = (await get('/admin/api/overview')).json;
          const buckets = overview.buckets as Array<{ deliveries: Record<string, number> }>;
          return buckets.reduce((n, b) => n + (b.deliveries.accepted ?? 0), 0) === PAID + FAILING && buckets.some((b) => (b.deliveries.invalid_signature ?? 0) > 0);
        },
        30_000,
      );
      assert.equal((overview.buckets as unknown[]).length, 60);
      const samples = (overview.buckets as Array<{ sample: { failed: number } | null }>).filter((b) => b.sample !== null);
      assert.ok(samples.length >= 1, 'a process sampled the backlog and failures this minute');
      assert.equal(samples.at(-1)!.sample!.failed, FAILING, 'the failed events, as they stood when sampled');
      assert.equal(typeof overview.failed, 'number');
      assert.equal((await get('/admin/api/overview?period=week')).status, 400);
      const openapi = (await get('/admin/api/openapi.json')).json;
      assert.match(String(openapi.openapi), /^3\./);
      const paths = Object.keys(openapi.paths as object);
      for (const path of [
        '/admin/api/events',
        '/admin/api/events/{id}',
        '/admin/api/payments/{provider}/{paymentId}',
        '/admin/api/events/{id}/replay',
        '/admin/api/reconcile/runs',
      ])
        assert.ok(paths.includes(path), path);
    });

    test('event detail: a timeline of each attempt (two failures, then the one that processed) and each replay', async () => {
      state.failing = false;
      state.failures.set('pi_api_flaky_0', 2);
      const answer = await service.post(stripeDelivery(stripePaymentEvent('evt_api_flaky_0', 'payment_intent.succeeded', 'pi_api_flaky_0', { userId: 'u_f', courseId: 'c_1' })));
      assert.equal(answer.status, 200);
      const [row] = events(await get('/admin/api/events?eventId=evt_api_flaky_0'));
      const id = row!.id as number;
      const status = async () => (await get(`/admin/api/events/${id}`)).json.status;
      await service.waitFor('the first attempt to fail', async () => (await status()) === 'failed');
      const replay = (reason: string) => call('POST', `/admin/api/events/${id}/replay`, { token: ADMIN.operator, body: { dryRun: false, reason } });
      assert.equal((await replay('second try')).json.result, 'failed');
      assert.equal((await replay('third try')).json.result, 'processed');

      const detail = (await get(`/admin/api/events/${id}`)).json;
      const attempts = detail.attemptLog as Array<{ attempt: number; owner: string; startedAt: string; endedAt: string; outcome: string; error: string | null }>;
      assert.deepEqual(
        attempts.map((a) => a.outcome),
        ['gave_up', 'gave_up', 'processed'],
        'MAX_ATTEMPTS is 1 here: each failure gives up, and an operator replay starts the next',
      );
      for (const attempt of attempts) {
        assert.match(attempt.owner, /^[^:]+:\d+:[0-9a-f]{8}$/, 'the worker that ran it');
        assert.ok(attempt.startedAt <= attempt.endedAt, `${attempt.startedAt} <= ${attempt.endedAt}`);
      }
      assert.match(attempts[0]!.error!, FLAKY_ERROR);
      assert.match(attempts[1]!.error!, FLAKY_ERROR);
      assert.equal(attempts[2]!.error, null);
      assert.ok(attempts[0]!.endedAt <= attempts[1]!.startedAt && attempts[1]!.endedAt <= attempts[2]!.startedAt, 'in the order they ran');
      const timeline = (detail.timeline as Array<{ what: string; by: string | null }>).map((t) => `${t.what}${t.by && t.what.startsWith('replay') ? ` (${t.by})` : ''}`);
      assert.deepEqual(timeline, [
        'received',
        'attempt 1: gave up',
        'replay (alice)',
        'attempt 1: gave up',
        'replay finished (alice)',
        'replay (alice)',
        'attempt 1: processed',
        'processed',
        'replay finished (alice)',
      ]);
      state.failing = true;
    });

    test('reconcile runs: newest first by keyset, for a viewer; a bad cursor or provider is a 400', async () => {
      const runs = Array.from({ length: 5 }, (_, n) => ({
        run_key: `api-run-${n}`,
        provider: n % 2 === 0 ? 'stripe' : 'razorpay',
        window_start: toDbTime(new Date(Date.UTC(2026, 11, 1, n))),
        window_end: toDbTime(new Date(Date.UTC(2026, 11, 1, n + 1))),
        dry_run: 0,
        status: 'finished' as const,
        found: n,
        recorded: n,
        errors: 0,
        cursor: null,
        last_error: n === 4 ? '<script>x</script> provider said no' : null,
        started_at: toDbTime(new Date(Date.UTC(2026, 11, 1, n + 1, 0, 1))),
        finished_at: toDbTime(new Date(Date.UTC(2026, 11, 1, n + 1, 0, 2))),
      }));
      await service.db.insertInto('reconcile_runs').values(runs).execute();
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: Answer = await get(`/admin/api/reconcile/runs?limit=2${cursor ? `&cursor=${cursor}` : ''}`);
        assert.equal(page.status, 200, page.text);
        seen.push(...(page.json.runs as Array<{ runKey: string }>).map((r) => r.runKey));
        cursor = page.json.nextCursor as string | null;
      } while (cursor);
      assert.deepEqual(seen, ['api-run-4', 'api-run-3', 'api-run-2', 'api-run-1', 'api-run-0']);
      const razorpay = (await get('/admin/api/reconcile/runs?provider=razorpay')).json.runs as Array<{ runKey: string; found: number }>;
      assert.deepEqual(
        razorpay.map((r) => r.runKey),
        ['api-run-3', 'api-run-1'],
      );
      for (const query of ['cursor=garbage', 'provider=paypal', 'limit=0']) {
        const answer = await get(`/admin/api/reconcile/runs?${query}`);
        assert.equal(answer.status, 400, query);
        assert.match(String(answer.json.message), new RegExp(`^${query.split('=')[0]!}: `));
      }
      assert.equal((await call('GET', '/admin/api/reconcile/runs')).status, 401);
      const page = await call('GET', '/admin/reconcile', { token: ADMIN.viewer });
      assert.equal(page.status, 200);
      assert.match(page.text, /api-run|stripe/);
      assert.match(page.text, /&lt;script&gt;x&lt;\/script&gt; provider said no/);
      assert.doesNotMatch(page.text, /<script>x/);
    });

    test('bulk replay lives in the database: started on one instance, read and cancelled on another; a dead runner shows interrupted', async () => {
      // Its captures succeed, slowly: a bulk replay it runs is still running when it shuts down.
      const slowly = async () => new Promise<void>((resolve) => setTimeout(resolve, 400));
      const second = await Harness.start(db.url, ADMIN_ENV, { domains: [coursePlatform], workers: false, handlers: { captured: [slowly] } });
      let secondClosed = false;
      const on = (harness: Harness, method: string, path: string, body?: unknown) =>
        fetch(`${harness.url}${path}`, {
          method,
          headers: { authorization: `Bearer ${ADMIN.operator}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        }).then(async (response) => ({ status: response.status, json: (await response.json()) as Record<string, unknown> }));
      try {
        state.delayMs = 500;
        const filter = { status: 'failed', provider: 'stripe' };
        const { count } = (await on(service, 'POST', '/admin/api/bulk-replays/count', filter)).json as { count: number };
        assert.ok(count >= 2, `${count} failed events to replay`);
        const started = await on(service, 'POST', '/admin/api/bulk-replays', { ...filter, reason: 'slow bulk', expectedCount: count });
        assert.equal(started.status, 202);
        const path = `/admin/api/bulk-replays/${String(started.json.id)}`;
        const seen = await on(second, 'GET', path);
        assert.equal(seen.status, 200, 'the other instance knows the job');
        assert.deepEqual([seen.json.state, seen.json.total, seen.json.actor], ['running', count, 'alice']);
        const cancel = await on(second, 'POST', `${path}/cancel`);
        assert.equal(cancel.status, 200);
        assert.equal(cancel.json.cancelRequested, true);
        let job: Record<string, unknown> = cancel.json;
        await service.waitFor('the runner to see the cancel', async () => {
          job = (await on(second, 'GET', path)).json;
          return job.state !== 'running';
        });
        assert.equal(job.state, 'cancelled');
        assert.ok((job.done as number) < count, `stopped after ${String(job.done)} of ${count}`);
        const listed = (await on(second, 'GET', '/admin/api/bulk-replays')).json.jobs as Array<{ id: string }>;
        assert.equal(listed[0]!.id, started.json.id);
        const actions = ((await on(second, 'GET', '/admin/api/audit')).json.actions as Array<{ action: string; target: string }>).filter(
          (a) => a.target === `bulk ${String(started.json.id)}`,
        );
        assert.deepEqual(
          actions.map((a) => a.action),
          ['bulk_replay_cancelled', 'bulk_replay_cancel', 'bulk_replay_started'],
        );

        // A job whose process died mid-run: still `running` in its row, with a heartbeat long past.
        const longAgo = toDbTime(new Date(service.clock.now().getTime() - 10 * 60_000));
        await service.db
          .insertInto('bulk_replays')
          .values({
            job_key: 'dead-runner-job',
            actor: 'alice',
            reason: 'r',
            filter: '{}',
            total: 10,
            done: 3,
            processed: 3,
            failed: 0,
            skipped: 0,
            state: 'running',
            error: null,
            cancel_requested: 0,
            runner: 'gone:1',
            heartbeat_at: longAgo,
            started_at: longAgo,
            finished_at: null,
          })
          .execute();
        assert.equal((await on(second, 'GET', '/admin/api/bulk-replays/dead-runner-job')).json.state, 'interrupted');
        assert.equal((await on(second, 'POST', '/admin/api/bulk-replays/dead-runner-job/cancel')).json.state, 'cancelled', 'no runner is left: cancelled at once');
        assert.equal((await on(second, 'GET', '/admin/api/bulk-replays/nobody')).status, 404);

        // A process that shuts down stops its bulk replays after the event in hand, and says so.
        const left = ((await on(second, 'POST', '/admin/api/bulk-replays/count', filter)).json as { count: number }).count;
        assert.ok(left >= 2, `${left} failed events left`);
        const onSecond = await on(second, 'POST', '/admin/api/bulk-replays', { ...filter, reason: 'until shutdown', expectedCount: left });
        assert.equal(onSecond.status, 202);
        const stopped = `/admin/api/bulk-replays/${String(onSecond.json.id)}`;
        await service.waitFor('the first event of it', async () => ((await on(service, 'GET', stopped)).json.done as number) >= 1);
        await second.close();
        secondClosed = true;
        const after = (await on(service, 'GET', stopped)).json;
        assert.equal(after.state, 'error');
        assert.match(String(after.error), /shut down/);
        assert.ok((after.done as number) < left, `stopped after ${String(after.done)} of ${left}`);
      } finally {
        state.delayMs = 0;
        if (!secondClosed) await second.close();
      }
    });
  });
}

/** The describes below start services of their own, on a SQLite database of this file's own. */
const ownDatabase = (await createTestDatabase('sqlite')) as TestDatabase;
after(() => ownDatabase.drop());

describe('admin off or misconfigured', () => {
  const database = ownDatabase;
  test('ADMIN_TOKENS with a short token, a bad role or a bad shape fails at start naming ADMIN_TOKENS', () => {
    for (const value of ['alice:operator:short', 'alice:admin:0123456789abcdef0123456789abcdef01', 'justatoken0123456789abcdef0123456789abcdef']) {
      assert.throws(() => loadConfig({ ADMIN_TOKENS: value }), /ADMIN_TOKENS/);
    }
    assert.throws(() => loadConfig({ ADMIN_AUTH: 'proxy' }), /ADMIN_PROXY_HEADER[\s\S]*ADMIN_PROXY_ROLES[\s\S]*TRUST_PROXY/);
    assert.throws(() => loadConfig({ TRUST_PROXY: '10.0.0.0/99' }), /TRUST_PROXY/);
    assert.equal(loadConfig({ ...ADMIN_ENV }).admin?.tokens.length, 2);
    assert.equal(loadConfig({}).admin, null);
  });

  test('without ADMIN_TOKENS, /admin answers 404', async () => {
    const service = await Harness.start(database.url);
    try {
      for (const path of ['/admin', '/admin/api/events', '/admin/sign-in']) assert.equal((await service.request('GET', path)).status, 404, path);
    } finally {
      await service.close();
    }
  });
});

describe('admin behind an SSO proxy', () => {
  const database = ownDatabase;
  const proxyEnv = { ADMIN_AUTH: 'proxy', ADMIN_PROXY_HEADER: 'X-Forwarded-Email', ADMIN_PROXY_ROLES: 'alice@example.com:operator,*:viewer', LOG_LEVEL: 'silent' };

  test('the header is believed from a TRUST_PROXY address only, with the role ADMIN_PROXY_ROLES gives', async () => {
    const trusted = await Harness.start(database.url, { ...proxyEnv, TRUST_PROXY: '127.0.0.1' });
    try {
      const me = (email: string) => fetch(`${trusted.url}/admin/api/me`, { headers: { 'x-forwarded-email': email } });
      assert.deepEqual(await (await me('alice@example.com')).json(), { name: 'alice@example.com', role: 'operator', via: 'proxy' });
      assert.deepEqual(await (await me('mallory@example.com')).json(), { name: 'mallory@example.com', role: 'viewer', via: 'proxy' });
      assert.equal((await fetch(`${trusted.url}/admin/api/me`)).status, 401, 'no header, no user');
      const post = (origin: string) =>
        fetch(`${trusted.url}/admin/api/outbox/1/retry`, {
          method: 'POST',
          headers: { 'x-forwarded-email': 'alice@example.com', origin, 'content-type': 'application/json' },
          body: '{"reason":"r"}',
        });
      assert.equal((await post('https://evil.example')).status, 403, 'a proxy identity is ambient: a foreign Origin is refused');
      assert.equal((await post(trusted.url)).status, 404, 'our Origin passes (there is no outbox row 1)');
    } finally {
      await trusted.close();
    }
    const untrusted = await Harness.start(database.url, { ...proxyEnv, TRUST_PROXY: '10.9.9.9' });
    try {
      const answer = await fetch(`${untrusted.url}/admin/api/me`, { headers: { 'x-forwarded-email': 'alice@example.com' } });
      assert.equal(answer.status, 401, 'the header from anyone else is ignored');
    } finally {
      await untrusted.close();
    }
  });

  test('the session cookie is Secure when a trusted proxy says the request came over https', async () => {
    const service = await Harness.start(database.url, { ...ADMIN_ENV, TRUST_PROXY: '127.0.0.1', LOG_LEVEL: 'silent' });
    try {
      const signIn = (headers: Record<string, string>) =>
        fetch(`${service.url}/admin/sign-in`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
          body: new URLSearchParams({ token: ADMIN.viewer }).toString(),
          redirect: 'manual',
        });
      assert.match((await signIn({ 'x-forwarded-proto': 'https' })).headers.get('set-cookie') ?? '', /; Secure/);
      assert.doesNotMatch((await signIn({})).headers.get('set-cookie') ?? '', /; Secure/);
    } finally {
      await service.close();
    }
  });
});
