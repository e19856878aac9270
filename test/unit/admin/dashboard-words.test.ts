import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { BulkReplayJob } from '../../../src/admin/bulk-replays.js';
import { COURSE_EFFECTS } from '../../../src/course-platform/handlers.js';
import { coursePlatform } from '../../../src/course-platform/course-platform.js';
import { FORWARD_KIND, forwarding } from '../../../src/forwarding/forwarding.js';
import type { StuckKind, StuckReport } from '../../../src/ops/stuck.js';
import type { OutboxEntry } from '../../../src/outbox/outbox-store.js';
import { auditTable } from '../../../src/http/admin/audit-page.js';
import { bulkConfirmPage, bulkJobPage } from '../../../src/http/admin/bulk-replay-pages.js';
import { outboxTable } from '../../../src/http/admin/outbox-page.js';
import type { PageContext } from '../../../src/http/admin/page-context.js';
import { problemsPage } from '../../../src/http/admin/problems-page.js';
import { inWords } from '../../../src/http/admin/words.js';
import { codesShown } from '../../support/page-words.js';

/** The words of the domains the service runs with forwarding on. */
const outboxKinds = { ...coursePlatform.outboxKinds, ...forwarding({ url: 'https://example.com/', secrets: [], timeoutMs: 1000, rawEvents: false }).outboxKinds };
const context: PageContext = { actor: { name: 'alice', role: 'operator', via: 'token' }, csrf: 'token', outboxKinds };

const outboxRow = (id: number, kind: string): OutboxEntry => ({
  id,
  idempotencyKey: `${kind}:stripe:pi_1`,
  kind,
  status: 'failed',
  attempts: 1,
  nextAttemptAt: null,
  lastError: 'downstream said 500',
  outcome: null,
  createdAt: new Date('2026-12-03T10:00:00Z'),
  sentAt: null,
});

describe('the dashboard says codes in words', () => {
  test('a code with words of its own is shown by them; any other with its underscores as spaces', () => {
    assert.equal(inWords({ would_replay: 'would be replayed' }, 'would_replay'), 'would be replayed');
    assert.equal(inWords({}, 'team_grant_sent'), 'team grant sent');
    assert.equal(inWords({}, 'toString'), 'toString', 'an inherited name is no entry');
  });

  test('failed and stuck: each kind of stuck event, and the outbox kinds', () => {
    const kinds: StuckKind[] = ['expired_lease', 'failed', 'old_received'];
    const report: StuckReport = {
      checkedAt: '2026-12-03T10:00:00.000Z',
      olderThanMs: 1_800_000,
      outboxOlderThanMs: 3_600_000,
      counts: { expired_lease: 1, failed: 1, old_received: 1 },
      events: kinds.map((kind, id) => ({
        kind,
        id,
        provider: 'stripe',
        eventId: `evt_${id}`,
        eventType: 'payment_intent.succeeded',
        attempts: 1,
        lastError: null,
        createdAt: '2026-12-03 09:00:00.000',
        dueAt: null,
        leaseOwner: null,
      })),
      outboxCounts: { failed: 1, overdue: 0 },
      outbox: [
        {
          state: 'failed',
          id: 1,
          kind: COURSE_EFFECTS.receipt,
          idempotencyKey: 'receipt:stripe:pi_1',
          status: 'failed',
          attempts: 3,
          lastError: null,
          createdAt: '',
          nextAttemptAt: null,
        },
      ],
      total: 4,
    };
    const page = problemsPage(context, report, []);
    assert.deepEqual(codesShown(page), []);
    for (const words of ['processing with an expired lease', 'received and never processed', 'receipt e-mail']) assert.ok(page.includes(words), words);
  });

  test("outbox rows: each kind the inbox writes, and a kind of a team's own", () => {
    const kinds = [COURSE_EFFECTS.receipt, COURSE_EFFECTS.fulfilment, COURSE_EFFECTS.cancellation, FORWARD_KIND, 'team_grant'];
    const shown = outboxTable(
      context,
      kinds.map((kind, id) => outboxRow(id, kind)),
    ).text;
    assert.deepEqual(codesShown(shown), []);
    for (const words of ['receipt e-mail', 'fulfilment request', 'fulfilment cancellation', 'forwarded event', 'team grant'])
      assert.ok(shown.includes(`<td class="">${words}</td>`), words);
  });

  test('audit: every action an admin records', () => {
    const actions = ['replay', 'outbox_retry', 'bulk_replay_started', 'bulk_replay_finished', 'bulk_replay_cancelled', 'bulk_replay_error', 'bulk_replay_cancel'];
    const shown = auditTable(
      actions.map((action) => ({ actor: 'alice', role: 'operator', action, target: 'bulk 1', reason: null, result: null, at: '2026-12-03T10:00:00.000Z' })),
    ).text;
    assert.deepEqual(codesShown(shown), []);
    for (const words of ['outbox retry', 'bulk replay started', 'bulk replay stopped by an error', 'bulk replay cancel asked']) assert.ok(shown.includes(words), words);
  });

  test("a bulk replay's filter, before it starts and while it runs", () => {
    const confirm = bulkConfirmPage(context, { status: 'failed', provider: 'stripe', type: '', from: '2026-12-01', to: '' }, 3);
    assert.match(confirm, /selects <strong id="bulk-total">3<\/strong> events \(status failed, provider stripe, received from 2026-12-01\)/);
    const job: BulkReplayJob = {
      id: 'job-1',
      actor: 'alice',
      reason: 'outage',
      filter: { status: 'failed', paymentId: 'pi_1', to: '2026-12-02T00:00:00.000Z' },
      total: 3,
      done: 1,
      counts: { processed: 1, failed: 0, skipped: 0 },
      state: 'running',
      cancelRequested: false,
      error: null,
      runner: 'host:1',
      heartbeatAt: '2026-12-03T10:00:00.000Z',
      startedAt: '2026-12-03T10:00:00.000Z',
      finishedAt: null,
    };
    const progress = bulkJobPage(context, job);
    assert.ok(progress.includes('status failed, payment pi_1, received before 2026-12-02T00:00:00.000Z'));
    assert.deepEqual(codesShown(progress), []);
    assert.doesNotMatch(progress, /paymentId|&quot;status&quot;/);
  });
});
