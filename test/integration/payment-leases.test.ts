import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { LeaseLostError } from '../../src/errors.js';
import type { VerifiedEvent } from '../../src/providers/provider.js';
import type { InboxStore } from '../../src/store/store.js';
import { describeEachStore } from '../support/store-suite.js';

/** The claim's per-payment rule, on every store: one event of a payment holds it at a time. */
const LEASE_MS = 30_000;

function verified(eventId: string): VerifiedEvent {
  return { provider: 'stripe', eventId, eventType: 'payment_intent.succeeded', payload: '{}', headers: {} };
}

await describeEachStore('payment leases', (suite) => {
  let store: InboxStore;
  const record = async (eventId: string, paymentId: string | null) => (await store.record(verified(eventId), paymentId)).id;
  const { clock } = suite;
  before(() => {
    ({ store } = suite);
  });

  test('a second event of the payment is refused while the first holds it, and claimable once it is processed', async () => {
    const first = await record('evt_pl_a1', 'pi_pl_a');
    const second = await record('evt_pl_a2', 'pi_pl_a');
    const other = await record('evt_pl_b1', 'pi_pl_b');

    const held = await store.claim(first, 'worker-1', LEASE_MS);
    assert.ok(held);
    assert.deepEqual(held.lease.payment, { provider: 'stripe', paymentId: 'pi_pl_a' });
    assert.equal(await store.claim(second, 'worker-2', LEASE_MS), null, 'the payment is held');
    assert.ok(await store.claim(other, 'worker-2', LEASE_MS), 'another payment is not');
    assert.equal((await store.eventState(second))?.status, 'received', 'the refused event is untouched');

    assert.deepEqual(await store.completeFenced(held.lease, async () => 'done'), { outcome: 'done', next: null }, 'nothing handed over unless asked');
    assert.equal(await store.nextDueEventOfPayment({ provider: 'stripe', paymentId: 'pi_pl_a' }), second, 'handed to whoever frees the payment');
    assert.ok(await store.claim(second, 'worker-2', LEASE_MS));
  });

  test('a failure releases the payment; so does the expiry of a dead holder', async () => {
    const first = await record('evt_pl_c1', 'pi_pl_c');
    const second = await record('evt_pl_c2', 'pi_pl_c');
    const third = await record('evt_pl_c3', 'pi_pl_c');

    const failing = await store.claim(first, 'worker-1', LEASE_MS);
    assert.ok(failing && (await store.fail(failing.lease, 'boom', new Date(clock.now().getTime() + 60_000))));
    const dying = await store.claim(second, 'worker-1', LEASE_MS);
    assert.ok(dying, 'claimable once the failure released the payment');
    assert.equal(await store.claim(third, 'worker-2', LEASE_MS), null);

    clock.advance(LEASE_MS + 1);
    const next = await store.claim(third, 'worker-2', LEASE_MS);
    assert.ok(next, 'the dead holder expired');
    await assert.rejects(store.completeFenced(dying.lease, async () => 'late'), LeaseLostError, 'the expired holder cannot commit');
    assert.equal((await store.completeFenced(next.lease, async () => 'done')).outcome, 'done');
  });

  test("a completion asked to hand over leases the payment's next due event to its owner, oldest first, until none waits", async () => {
    const [h1, h2, h3] = [await record('evt_pl_h1', 'pi_pl_h'), await record('evt_pl_h2', 'pi_pl_h'), await record('evt_pl_h3', 'pi_pl_h')];
    const held = await store.claim(h1, 'worker-1', LEASE_MS);
    assert.ok(held);

    const first = await store.completeFenced(held.lease, async () => 'done 1', LEASE_MS);
    assert.equal(first.outcome, 'done 1');
    assert.ok(first.next, 'the waiting event came with the commit');
    assert.equal(first.next.event.id, h2);
    assert.equal(first.next.event.eventId, 'evt_pl_h2');
    assert.deepEqual({ owner: first.next.lease.owner, attempts: first.next.lease.attempts, payment: first.next.lease.payment, takeover: first.next.takeover }, {
      owner: 'worker-1',
      attempts: 1,
      payment: { provider: 'stripe', paymentId: 'pi_pl_h' },
      takeover: false,
    });
    assert.notEqual(first.next.lease.token, held.lease.token, 'a lease of its own');
    assert.equal((await store.eventState(h2))?.status, 'processing');
    assert.equal(await store.claim(h2, 'worker-2', LEASE_MS), null, 'leased: nobody else claims it');
    assert.equal(await store.claim(h3, 'worker-2', LEASE_MS), null, 'the payment stays held');

    const second = await store.completeFenced(first.next.lease, async () => 'done 2', LEASE_MS);
    assert.equal(second.next?.event.id, h3);
    const third = await store.completeFenced(second.next.lease, async () => 'done 3', LEASE_MS);
    assert.equal(third.next, null, 'nothing left to hand over');
    const states = await Promise.all([h1, h2, h3].map((id) => store.eventState(id)));
    assert.deepEqual(states.map((state) => [state?.status, state?.outcome]), [['processed', 'done 1'], ['processed', 'done 2'], ['processed', 'done 3']]);
    assert.equal(await store.nextDueEventOfPayment({ provider: 'stripe', paymentId: 'pi_pl_h' }), null);
    assert.ok(await store.claim(await record('evt_pl_h4', 'pi_pl_h'), 'worker-2', LEASE_MS), 'the payment was freed by the last completion');
  });

  test('one completion batch hands each payment over to its own next event', async () => {
    const payments = ['pi_pl_j', 'pi_pl_k', 'pi_pl_l'];
    const firsts = await Promise.all(payments.map((paymentId) => record(`evt_${paymentId}_1`, paymentId)));
    const seconds = await Promise.all(payments.slice(0, 2).map((paymentId) => record(`evt_${paymentId}_2`, paymentId)));
    const claims = await Promise.all(firsts.map((id) => store.claim(id, 'worker-1', LEASE_MS)));
    const completions = await Promise.all(claims.map((claimed, i) => store.completeFenced(claimed!.lease, async () => `done ${i}`, LEASE_MS)));
    assert.deepEqual(completions.map((c) => c.outcome), ['done 0', 'done 1', 'done 2']);
    assert.deepEqual(completions.map((c) => c.next?.event.id ?? null), [...seconds, null], 'each payment its own next event; none for the payment with no other');
    assert.deepEqual(completions.map((c) => c.next?.lease.payment?.paymentId ?? null), ['pi_pl_j', 'pi_pl_k', null]);
  });

  test('a completion that fails hands nothing over; a handed-over lease that expires is taken over and cannot commit', async () => {
    const [m1, m2] = [await record('evt_pl_m1', 'pi_pl_m'), await record('evt_pl_m2', 'pi_pl_m')];
    const held = await store.claim(m1, 'worker-1', LEASE_MS);
    await assert.rejects(
      store.completeFenced(held!.lease, async () => {
        throw new Error('handler failed');
      }, LEASE_MS),
      /handler failed/,
    );
    assert.equal((await store.eventState(m2))?.status, 'received', 'rolled back with the failed work');
    assert.equal(await store.claim(m2, 'worker-2', LEASE_MS), null, 'the payment is still held by the failed attempt');

    assert.ok(await store.fail(held!.lease, 'handler failed', null));
    const retaken = await store.claim(m2, 'worker-1', LEASE_MS);
    const m3 = await record('evt_pl_m3', 'pi_pl_m');
    const handedOver = (await store.completeFenced(retaken!.lease, async () => 'done', LEASE_MS)).next;
    assert.equal(handedOver?.event.id, m3);
    clock.advance(LEASE_MS + 1);
    const takeover = await store.claim(m3, 'worker-2', LEASE_MS);
    assert.ok(takeover?.takeover, 'its holder went quiet: taken over');
    await assert.rejects(store.completeFenced(handedOver.lease, async () => 'late'), LeaseLostError, 'the stale holder cannot commit');
    assert.equal((await store.completeFenced(takeover.lease, async () => 'done by worker-2')).outcome, 'done by worker-2');
  });

  test('events about no payment take no payment lease', async () => {
    const a = await record('evt_pl_none1', null);
    const b = await record('evt_pl_none2', null);
    const claimedA = await store.claim(a, 'worker-1', LEASE_MS);
    const claimedB = await store.claim(b, 'worker-2', LEASE_MS);
    assert.equal(claimedA?.lease.payment, null);
    assert.ok(claimedB, 'no shared lease between unrelated events');
  });
});
