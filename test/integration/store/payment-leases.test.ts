import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { LeaseLostError } from '../../../src/errors.js';
import type { VerifiedEvent } from '../../../src/model/delivery.js';
import type { InboxStore } from '../../../src/store/inbox-store.js';
import { describeEachStore } from '../../support/store-suite.js';

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

    assert.equal(await store.completeFenced(held.lease, async () => 'done'), 'done');
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
    await assert.rejects(
      store.completeFenced(dying.lease, async () => 'late'),
      LeaseLostError,
      'the expired holder cannot commit',
    );
    assert.equal(await store.completeFenced(next.lease, async () => 'done'), 'done');
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
