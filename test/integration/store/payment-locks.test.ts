import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import type { VerifiedEvent } from '../../../src/model/delivery.js';
import { openStore } from '../../../src/store/open-store.js';
import type { KyselyInboxStore } from '../../../src/store/kysely-store.js';
import { customOutcome } from '../../../src/model/outcome.js';
import { describeEachStore } from '../../support/store-suite.js';

/**
 * The payment lock, on every store: the transaction that applies an event locks its payment first,
 * so a second event of the payment, claimed by another store (another process), waits for the first
 * to commit; nothing is written to hold or free it.
 */
const LEASE_MS = 30_000;

function verified(eventId: string): VerifiedEvent {
  return { provider: 'stripe', eventId, eventType: 'payment_intent.succeeded', payload: '{}', headers: {} };
}

/** A promise and the function that resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

await describeEachStore('payment locks', (suite) => {
  let store: KyselyInboxStore;
  /** A second store on the same database: a second process, as far as the database can tell. */
  let other: KyselyInboxStore;
  const record = async (eventId: string, paymentId: string | null) => (await store.record(verified(eventId), paymentId)).id;
  before(() => {
    ({ store } = suite);
    other = openStore(suite.database.url, { poolSize: 2, clock: suite.clock });
  });
  after(() => other?.close());

  test('a second event of the payment is claimed, and its work starts only once the first has committed', async () => {
    const first = await record('evt_pl_a1', 'pi_pl_a');
    const second = await record('evt_pl_a2', 'pi_pl_a');
    const held = await store.claim(first, 'worker-1', LEASE_MS);
    const waiting = await other.claim(second, 'worker-2', LEASE_MS);
    assert.ok(held && waiting, 'the claim does not hold the payment');
    assert.deepEqual(held.lease.payment, { provider: 'stripe', paymentId: 'pi_pl_a' });

    const firstWorking = gate();
    const releaseFirst = gate();
    const order: string[] = [];
    const firstDone = store.completeFenced(held.lease, async () => {
      firstWorking.open();
      await releaseFirst.opened;
      order.push('first');
      return customOutcome('first');
    });
    await firstWorking.opened;
    const secondDone = other.completeFenced(waiting.lease, async () => {
      order.push('second');
      return customOutcome('second');
    });
    await sleep(300);
    assert.deepEqual(order, [], 'the second waits while the first holds the payment');
    releaseFirst.open();
    assert.deepEqual(await Promise.all([firstDone, secondDone]), [customOutcome('first'), customOutcome('second')]);
    assert.deepEqual(order, ['first', 'second']);
    assert.equal((await store.eventState(second))?.status, 'processed');
  });

  test('other payments do not wait', async () => {
    const busy = await store.claim(await record('evt_pl_b1', 'pi_pl_b'), 'worker-1', LEASE_MS);
    assert.ok(busy);
    const release = gate();
    const working = gate();
    const busyDone = store.completeFenced(busy.lease, async () => {
      working.open();
      await release.opened;
      return customOutcome('busy');
    });
    await working.opened;
    if (suite.backend !== 'sqlite') {
      // SQLite runs one write transaction at a time: there, every other transaction waits anyway.
      const free = await other.claim(await record('evt_pl_c1', 'pi_pl_c'), 'worker-2', LEASE_MS);
      const none = await other.claim(await record('evt_pl_none', null), 'worker-2', LEASE_MS);
      assert.ok(free && none);
      assert.equal(none.lease.payment, null);
      assert.deepEqual(await other.completeFenced(free.lease, async () => customOutcome('free')), customOutcome('free'));
      assert.deepEqual(await other.completeFenced(none.lease, async () => customOutcome('none')), customOutcome('none'));
    }
    release.open();
    assert.deepEqual(await busyDone, customOutcome('busy'));
  });

  test('a failed attempt holds nothing: the next event of the payment completes at once', async () => {
    const failing = await store.claim(await record('evt_pl_d1', 'pi_pl_d'), 'worker-1', LEASE_MS);
    assert.ok(failing && (await store.fail(failing.lease, 'boom', new Date(suite.clock.now().getTime() + 60_000))));
    const next = await other.claim(await record('evt_pl_d2', 'pi_pl_d'), 'worker-2', LEASE_MS);
    assert.ok(next);
    assert.deepEqual(await other.completeFenced(next.lease, async () => customOutcome('done')), customOutcome('done'));
  });

  // The database server's own locks and timeouts: SQLite, one writer, takes no lock and has no server.
  if (suite.backend !== 'sqlite') {
    test('a transaction stalled past the idle timeout is dropped by the server, and the payment is free', async () => {
      const stalling = openStore(suite.database.url, { poolSize: 2, clock: suite.clock, idleTransactionTimeoutMs: 1000 });
      try {
        const stalled = await stalling.claim(await record('evt_pl_f1', 'pi_pl_f'), 'worker-1', LEASE_MS);
        const next = await other.claim(await record('evt_pl_f2', 'pi_pl_f'), 'worker-2', LEASE_MS);
        assert.ok(stalled && next);
        const working = gate();
        let woke = false;
        const stalledDone = stalling.completeFenced(stalled.lease, async () => {
          working.open();
          await sleep(4000);
          woke = true;
          return customOutcome('late');
        });
        const outcome = stalledDone.then(
          () => 'committed',
          () => 'rolled back',
        );
        await working.opened;
        assert.deepEqual(await other.completeFenced(next.lease, async () => customOutcome('next')), customOutcome('next'));
        assert.equal(woke, false, 'the next event ran while the stalled one still slept');
        assert.equal(await outcome, 'rolled back');
        assert.equal((await store.eventState(stalled.lease.id))?.status, 'processing', 'nothing of the stalled attempt committed');
      } finally {
        await stalling.close();
      }
    });

    test('a missing lock row fails the completion instead of leaving the payment unlocked', async () => {
      const claimed = await store.claim(await record('evt_pl_e1', 'pi_pl_e'), 'worker-1', LEASE_MS);
      assert.ok(claimed);
      await store.db.deleteFrom('payment_leases').where('payment_id', '=', 'pi_pl_e').execute();
      await assert.rejects(
        store.completeFenced(claimed.lease, async () => customOutcome('done')),
        /payment lock row is missing/,
      );
      assert.equal((await store.eventState(claimed.lease.id))?.status, 'processing', 'rolled back');
    });
  }
});
