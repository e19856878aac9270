import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { DETAILS, planPaymentChange, storedMetadata, type PaymentSnapshot } from '../../../src/domain/payment-change.js';
import { PAYMENT_STATE_ORDER, type PaymentEvent, type PaymentState } from '../../../src/model/payment-event.js';

const rank = (state: PaymentState) => PAYMENT_STATE_ORDER.indexOf(state);

function event(state: PaymentState, fields: Partial<PaymentEvent> = {}): PaymentEvent {
  return { kind: 'payment', paymentId: 'pi_1', state, amountMinor: null, currency: null, email: null, metadata: {}, ...fields };
}

function payment(status: PaymentState, fields: Partial<PaymentSnapshot> = {}): PaymentSnapshot {
  return { status, email: null, amount: null, currency: null, metadata: null, ...fields };
}

const state = fc.constantFrom(...PAYMENT_STATE_ORDER);
const text = fc.option(fc.string({ minLength: 1, maxLength: 8 }));
const metadata = fc.dictionary(fc.constantFrom('plan', 'seats', 'ref', 'constructor'), fc.string({ maxLength: 6 }), { maxKeys: 3, noNullPrototype: true });
const arbitraryEvent = fc
  .record(
    {
      state,
      amountMinor: fc.option(fc.integer({ min: 0, max: 10_000 })),
      currency: text,
      email: text,
      metadata,
    },
    { noNullPrototype: true },
  )
  .map((fields) => event(fields.state, fields));
const arbitraryPayment = fc.option(
  fc.record(
    {
      status: state,
      amount: fc.option(fc.integer({ min: 0, max: 10_000 })),
      currency: text,
      email: text,
      // Stored metadata as JSON text, none, or text that is not a JSON object (written by hand).
      metadata: fc.oneof(
        fc.constant(null),
        metadata.map((m) => JSON.stringify(m)),
        fc.constantFrom('not json', '[1]'),
      ),
    },
    { noNullPrototype: true },
  ),
);

/** The payment after each event in turn, as processing applies them: each plan's `after` is the next one's `current`. */
function fold(events: PaymentEvent[]): PaymentSnapshot | null {
  return events.reduce<PaymentSnapshot | null>((current, next) => planPaymentChange(current, next).after, null);
}

describe('planPaymentChange', () => {
  test('every pair of states: a payment moves only to a later state; an event of its own or an earlier state is stale', () => {
    for (const from of PAYMENT_STATE_ORDER) {
      for (const reported of PAYMENT_STATE_ORDER) {
        const plan = planPaymentChange(payment(from), event(reported));
        const moves = rank(reported) > rank(from);
        assert.equal(plan.moves, moves, `${from} then ${reported}`);
        assert.equal(plan.from, from);
        assert.equal(plan.to, moves ? reported : from, `${from} then ${reported}`);
        assert.deepEqual(
          plan.outcome,
          moves
            ? { kind: 'applied', paymentId: 'pi_1', from, to: reported, detailsCompleted: false }
            : { kind: 'stale', paymentId: 'pi_1', state: from, reported, detailsCompleted: false },
        );
        assert.equal(plan.detailsCompleted, false);
        assert.deepEqual([plan.filled, plan.metadata], [{}, null], 'nothing to write besides the state');
      }
    }
  });

  test('no payment yet: the event creates it in the state it reports, with everything it carries', () => {
    for (const reported of PAYMENT_STATE_ORDER) {
      const plan = planPaymentChange(null, event(reported, { email: 'a@example.com', amountMinor: 4900, metadata: { plan: 'pro' } }));
      assert.deepEqual(plan, {
        from: null,
        to: reported,
        moves: true,
        detailsCompleted: false,
        filled: { email: 'a@example.com', amount: 4900 },
        metadata: { from: null, to: '{"plan":"pro"}' },
        after: payment(reported, { email: 'a@example.com', amount: 4900, metadata: '{"plan":"pro"}' }),
        outcome: { kind: 'applied', paymentId: 'pi_1', from: null, to: reported, detailsCompleted: false },
      });
    }
    assert.equal(planPaymentChange(null, event('created')).after.metadata, null, 'no metadata: none stored');
  });

  test('a stale event still completes what the payment lacks, and says so; a detail already there keeps its value', () => {
    const current = payment('captured', { email: 'first@example.com', metadata: '{"plan":"pro"}' });
    const plan = planPaymentChange(current, event('authorized', { email: 'late@example.com', amountMinor: 4900, metadata: { plan: 'changed', seats: '3' } }));
    assert.equal(plan.moves, false);
    assert.equal(plan.detailsCompleted, true);
    assert.deepEqual(plan.filled, { amount: 4900 });
    assert.deepEqual(plan.metadata, { from: '{"plan":"pro"}', to: '{"plan":"pro","seats":"3"}' });
    assert.deepEqual(plan.after, payment('captured', { email: 'first@example.com', amount: 4900, metadata: '{"plan":"pro","seats":"3"}' }));
    assert.deepEqual(plan.outcome, { kind: 'stale', paymentId: 'pi_1', state: 'captured', reported: 'authorized', detailsCompleted: true });
  });

  test('property: the state after is the later of the two, never earlier than before; the outcome says which happened', () => {
    fc.assert(
      fc.property(arbitraryPayment, arbitraryEvent, (current, next) => {
        const plan = planPaymentChange(current, next);
        const expected = current === null || rank(next.state) > rank(current.status) ? next.state : current.status;
        assert.equal(plan.to, expected);
        assert.equal(plan.after.status, expected);
        assert.equal(plan.moves, current === null || rank(next.state) > rank(current.status));
        if (current) assert.ok(rank(plan.to) >= rank(current.status), 'never backwards');
        assert.equal(plan.from, current?.status ?? null);
        assert.equal(plan.outcome.kind, plan.moves ? 'applied' : 'stale');
        assert.equal(plan.outcome.paymentId, next.paymentId);
        assert.equal(plan.outcome.detailsCompleted, plan.detailsCompleted);
        if (plan.outcome.kind === 'stale') assert.deepEqual([plan.outcome.state, plan.outcome.reported], [plan.to, next.state]);
        else assert.deepEqual([plan.outcome.from, plan.outcome.to], [plan.from, plan.to]);
      }),
    );
  });

  test('property: a detail is filled only where it was empty, a metadata key only where it was missing; details completed says whether either happened', () => {
    fc.assert(
      fc.property(arbitraryPayment, arbitraryEvent, (current, next) => {
        const plan = planPaymentChange(current, next);
        const carried = { email: next.email, amount: next.amountMinor, currency: next.currency };
        for (const column of DETAILS) {
          const before = current ? current[column] : null;
          assert.equal(plan.after[column], before ?? carried[column], column);
          assert.equal(Object.hasOwn(plan.filled, column), before === null && carried[column] !== null, column);
        }
        const kept = storedMetadata(current?.metadata ?? null);
        const after = storedMetadata(plan.after.metadata);
        for (const [name, value] of Object.entries(kept)) assert.equal(after[name], value, `${name} keeps its first value`);
        for (const name of Object.keys(next.metadata)) assert.ok(Object.hasOwn(after, name), `${name} is there after`);
        const added = Object.keys(next.metadata).some((name) => !Object.hasOwn(kept, name));
        assert.equal(plan.metadata === null, !added);
        if (plan.metadata) assert.equal(plan.metadata.from, current?.metadata ?? null, 'a compare-and-set on the text read');
        assert.equal(plan.detailsCompleted, current !== null && (Object.keys(plan.filled).length > 0 || added));
      }),
    );
  });

  test('property: whatever order its events come in, a payment ends in the highest state reported, with the same details', () => {
    fc.assert(
      fc.property(
        fc.array(arbitraryEvent, { minLength: 1, maxLength: 6 }).chain((events) => fc.tuple(fc.constant(events), fc.shuffledSubarray(events, { minLength: events.length }))),
        ([events, shuffled]) => {
          const highest = PAYMENT_STATE_ORDER[Math.max(...events.map((e) => rank(e.state)))];
          const inOrder = fold(events)!;
          const reordered = fold(shuffled)!;
          assert.equal(inOrder.status, highest);
          assert.equal(reordered.status, highest);
          // Each detail is the first one given, so only which details are set is order-independent.
          for (const column of DETAILS) assert.equal(inOrder[column] === null, reordered[column] === null, column);
          assert.deepEqual(Object.keys(storedMetadata(inOrder.metadata)).sort(), Object.keys(storedMetadata(reordered.metadata)).sort());
        },
      ),
    );
  });

  test('pure: the same inputs give the same plan, and the inputs are left as they were', () => {
    fc.assert(
      fc.property(arbitraryPayment, arbitraryEvent, (current, next) => {
        const [currentCopy, nextCopy] = [structuredClone(current), structuredClone(next)];
        assert.deepEqual(planPaymentChange(current, next), planPaymentChange(current, next));
        assert.deepEqual([current, next], [currentCopy, nextCopy]);
      }),
    );
  });
});
