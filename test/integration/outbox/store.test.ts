import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { OutboxStore } from '../../../src/outbox/outbox-store.js';
import { toDbTime } from '../../../src/db/schema.js';
import type { KyselyInboxStore } from '../../../src/store/kysely-store.js';
import { describeEachStore } from '../../support/store-suite.js';
import { watchingQueries } from '../../support/query-watch.js';

/** The outbox rows' lease-and-fence contract, on every store backend. */
const LEASE_MS = 30_000;

await describeEachStore('outbox store', (suite) => {
  let store: KyselyInboxStore;
  let outbox: OutboxStore;
  const { clock } = suite;
  before(() => {
    ({ store } = suite);
    outbox = new OutboxStore(store.db, clock);
  });

  async function addRow(key: string, dependsOn: string | null = null, orderingKey: string | null = null): Promise<number> {
    const now = toDbTime(clock.now());
    await store.db
      .insertInto('outbox')
      .values({
        idempotency_key: key,
        kind: 'test',
        payload: JSON.stringify({ key }),
        status: 'pending',
        attempts: 0,
        next_attempt_at: now,
        created_at: now,
        depends_on_key: dependsOn,
        ordering_key: orderingKey,
      })
      .execute();
    return (await store.db.selectFrom('outbox').select('id').where('idempotency_key', '=', key).executeTakeFirstOrThrow()).id;
  }

  test('one winner among concurrent claimers; the live lease is not claimable; attempts counted', async () => {
    const id = await addRow('claim:1');
    const claims = await Promise.all(Array.from({ length: 8 }, (_, i) => outbox.claim(id, `dispatcher-${i}`, LEASE_MS)));
    const winners = claims.filter((c) => c !== null);
    assert.equal(winners.length, 1);
    assert.equal(winners[0]!.lease.attempts, 1);
    assert.deepEqual(winners[0]!.message, { id, idempotencyKey: 'claim:1', kind: 'test', payload: { key: 'claim:1' } });
    assert.equal(await outbox.claim(id, 'late', LEASE_MS), null);
    assert.ok(!(await outbox.dueIds(100)).includes(id), 'a row under a live lease is not due');
    assert.equal(await outbox.finish(winners[0]!.lease, 'sent', 'HTTP 200'), true);
    const entry = await outbox.find(id);
    assert.equal(entry?.status, 'sent');
    assert.equal(entry?.outcome, 'HTTP 200');
    assert.ok(entry?.sentAt);
    assert.equal(await outbox.claim(id, 'again', LEASE_MS), null, 'a sent row is never claimed again');
  });

  test('takeover after the lease expires; the stale holder can neither finish nor fail the row', async () => {
    const id = await addRow('takeover:1');
    const stale = (await outbox.claim(id, 'crashed', LEASE_MS))!;
    clock.advance(LEASE_MS + 1);
    assert.ok((await outbox.dueIds(100)).includes(id), 'an expired lease makes the row due');
    const fresh = (await outbox.claim(id, 'successor', LEASE_MS))!;
    assert.equal(fresh.lease.attempts, 2);
    assert.equal(fresh.message.idempotencyKey, 'takeover:1', 'the successor sends under the same key');
    assert.equal(await outbox.finish(stale.lease, 'sent', 'late'), false);
    assert.equal(await outbox.fail(stale.lease, 'late', null), false);
    assert.equal(await outbox.finish(fresh.lease, 'sent', 'HTTP 200'), true);
    assert.equal((await outbox.find(id))?.outcome, 'HTTP 200');
  });

  test('a failure is pending again at its retry time, not before; without one it is failed', async () => {
    const id = await addRow('retry:1');
    const first = (await outbox.claim(id, 'd', LEASE_MS))!;
    assert.equal(await outbox.fail(first.lease, 'HTTP 503', new Date(clock.now().getTime() + 60_000)), true);
    let entry = await outbox.find(id);
    assert.equal(entry?.status, 'pending');
    assert.equal(entry?.lastError, 'HTTP 503');
    assert.equal(await outbox.claim(id, 'd', LEASE_MS), null, 'not before the retry time');
    clock.advance(60_001);
    const second = (await outbox.claim(id, 'd', LEASE_MS))!;
    assert.equal(second.lease.attempts, 2);
    assert.equal(await outbox.fail(second.lease, 'HTTP 422: no such course', null), true);
    entry = await outbox.find(id);
    assert.equal(entry?.status, 'failed');
    assert.equal(entry?.nextAttemptAt, null);
    assert.ok(!(await outbox.dueIds(100)).includes(id));
  });

  test('a row waits while the row it depends on is unfinished', async () => {
    const first = await addRow('dep:first');
    const second = await addRow('dep:second', 'dep:first');
    let due = await outbox.dueIds(100);
    assert.ok(due.includes(first) && !due.includes(second));
    const lease = (await outbox.claim(first, 'd', LEASE_MS))!.lease;
    assert.ok(!(await outbox.dueIds(100)).includes(second), 'still waiting while the first is being sent');
    await outbox.fail(lease, 'HTTP 500', clock.now());
    assert.ok(!(await outbox.dueIds(100)).includes(second), 'still waiting while the first is retried');
    await outbox.finish((await outbox.claim(first, 'd', LEASE_MS))!.lease, 'sent', 'ok');
    due = await outbox.dueIds(100);
    assert.ok(due.includes(second), 'due once the first is final');
  });

  test('operators retry failed or skipped rows with a fresh budget, never sent ones; counts per status', async () => {
    const failed = await addRow('ops:failed');
    const skipped = await addRow('ops:skipped');
    const sent = await addRow('ops:sent');
    await outbox.fail((await outbox.claim(failed, 'd', LEASE_MS))!.lease, 'HTTP 400', null);
    await outbox.finish((await outbox.claim(skipped, 'd', LEASE_MS))!.lease, 'skipped', 'skipped: SMTP_URL is not set');
    await outbox.finish((await outbox.claim(sent, 'd', LEASE_MS))!.lease, 'sent', 'ok');

    assert.equal(await outbox.retry({ id: sent }), 0);
    assert.equal(await outbox.retry({ id: failed }), 1);
    const retried = await outbox.find(failed);
    assert.equal(retried?.status, 'pending');
    assert.equal(retried?.attempts, 0);
    assert.ok((await outbox.dueIds(100)).includes(failed));
    assert.equal(await outbox.retry({ status: 'skipped' }), 1);
    assert.equal((await outbox.find(skipped))?.status, 'pending');

    const counts = await outbox.countByStatus();
    assert.equal(counts.failed, 1, 'retry:1 from the earlier test');
    assert.ok(counts.sent >= 4);
    assert.equal(counts.sending, 0);
    const listed = await outbox.list({ status: 'pending', limit: 10 });
    assert.deepEqual(listed.map((e) => e.idempotencyKey).sort(), ['dep:second', 'ops:failed', 'ops:skipped']);
  });

  /** An outbox store whose UPDATE statements are counted. */
  function countingUpdates(): { outbox: OutboxStore; updates: () => number } {
    let updates = 0;
    const counter = watchingQueries((node) => {
      if (node.kind === 'UpdateQueryNode') updates++;
    });
    return { outbox: new OutboxStore(store.db.withPlugin(counter), clock), updates: () => updates };
  }

  test('concurrent finishes share one UPDATE; each row gets its own status, outcome and send time', async () => {
    const ids = await Promise.all(['batch:a', 'batch:b', 'batch:c', 'batch:d'].map((key) => addRow(key)));
    const leases = await Promise.all(ids.map(async (id) => (await outbox.claim(id, 'd', LEASE_MS))!.lease));
    const counted = countingUpdates();
    const finished = await Promise.all(leases.map((lease, i) => counted.outbox.finish(lease, i % 2 === 0 ? 'sent' : 'skipped', `outcome ${i}`)));
    assert.deepEqual(finished, [true, true, true, true]);
    assert.equal(counted.updates(), 1);
    for (const [i, id] of ids.entries()) {
      const row = await store.db.selectFrom('outbox').selectAll().where('id', '=', id).executeTakeFirstOrThrow();
      assert.equal(row.status, i % 2 === 0 ? 'sent' : 'skipped');
      assert.equal(row.outcome, `outcome ${i}`);
      assert.equal(row.sent_at !== null, i % 2 === 0, 'only a sent row has a send time');
      assert.equal(row.lease_token, null);
      assert.equal(row.next_attempt_at, null);
    }
  });

  test('in a batch of finishes, those whose lease was taken over return false and leave the new holder its row', async () => {
    const [kept, takenAndSent, takenAndSending, alsoKept] = await Promise.all(['mixed:a', 'mixed:b', 'mixed:c', 'mixed:d'].map((key) => addRow(key)));
    const stale = await Promise.all([kept!, takenAndSent!, takenAndSending!, alsoKept!].map(async (id) => (await outbox.claim(id, 'stalled', LEASE_MS))!.lease));
    clock.advance(LEASE_MS + 1);
    const successor = (id: number) => outbox.claim(id, 'successor', LEASE_MS).then((claimed) => claimed!.lease);
    const [sentLease, sendingLease] = await Promise.all([successor(takenAndSent!), successor(takenAndSending!)]);
    assert.equal(await outbox.finish(sentLease, 'sent', 'successor: HTTP 200'), true);

    // The stalled holder's deliveries all end now; its leases expired but only two were taken over.
    const finished = await Promise.all(stale.map((lease) => outbox.finish(lease, 'sent', 'stalled: HTTP 200')));
    assert.deepEqual(finished, [true, false, false, true]);
    assert.equal((await outbox.find(kept!))?.outcome, 'stalled: HTTP 200');
    assert.equal((await outbox.find(alsoKept!))?.outcome, 'stalled: HTTP 200');
    assert.equal((await outbox.find(takenAndSent!))?.outcome, 'successor: HTTP 200');
    const sending = await store.db.selectFrom('outbox').selectAll().where('id', '=', takenAndSending!).executeTakeFirstOrThrow();
    assert.equal(sending.status, 'sending');
    assert.equal(sending.lease_token, sendingLease.token);
    assert.equal(sending.outcome, null);
    assert.equal(await outbox.finish(sendingLease, 'sent', 'successor: HTTP 200'), true);
  });

  test('the same lease finished twice at once: one call records it', async () => {
    const id = await addRow('twice:1');
    const { lease } = (await outbox.claim(id, 'd', LEASE_MS))!;
    const finished = await Promise.all([outbox.finish(lease, 'sent', 'first'), outbox.finish(lease, 'sent', 'second')]);
    assert.deepEqual(finished.sort(), [false, true]);
    assert.equal((await outbox.find(id))?.status, 'sent');
  });

  test('rows of one ordering key are due one at a time, in the order written: a retry holds the next back, a final row lets it go', async () => {
    const first = await addRow('ordered:a1', null, 'order:a');
    const second = await addRow('ordered:a2', null, 'order:a');
    const third = await addRow('ordered:a3', null, 'order:a');
    const other = await addRow('ordered:b1', null, 'order:b');
    const due = async () => (await outbox.dueIds(100)).filter((id) => [first, second, third, other].includes(id));
    assert.deepEqual((await due()).sort(), [first, other].sort(), 'the first of each key');

    const claimed = await outbox.claim(first, 'dispatcher', LEASE_MS);
    assert.ok(claimed);
    assert.deepEqual(await due(), [other], 'not the next one while the first is being sent');
    assert.equal(await outbox.fail(claimed.lease, 'HTTP 503', new Date(clock.now().getTime() + 60_000)), true);
    assert.deepEqual(await due(), [other], 'nor while the first waits for its retry');

    clock.advance(60_001);
    const retried = await outbox.claim(first, 'dispatcher', LEASE_MS);
    assert.ok(retried);
    assert.equal(await outbox.fail(retried.lease, 'HTTP 400', null), true);
    assert.deepEqual((await due()).sort(), [second, other].sort(), 'a row failed for good lets the next one go');
    const next = await outbox.claim(second, 'dispatcher', LEASE_MS);
    assert.ok(next);
    assert.equal(await outbox.finish(next.lease, 'sent', 'HTTP 200'), true);
    assert.deepEqual((await due()).sort(), [third, other].sort());
    // Gone again: the suite's other tests count rows by status.
    await store.db.deleteFrom('outbox').where('idempotency_key', 'like', 'ordered:%').execute();
  });
});
