import assert from 'node:assert/strict';
import { test } from 'node:test';
import { paymentRounds } from '../../../src/store/complete.js';
import type { PaymentRef } from '../../../src/store/inbox-store.js';

/** An event named by its payment and its place among that payment's events: `a1`, `a2`, `b1`; `-1` is about no payment. */
const paymentOf = (name: string): PaymentRef | null => (name.startsWith('-') ? null : { provider: 'stripe', paymentId: name.slice(0, 1) });

test('each round holds one event per payment, a payment keeping the order of its events', () => {
  assert.deepEqual(paymentRounds(['a1', 'b1', 'a2', 'c1', 'a3', 'b2'], paymentOf), [['a1', 'b1', 'c1'], ['a2', 'b2'], ['a3']]);
});

test('events about no payment all go to the first round; one payment per round is the only rule', () => {
  assert.deepEqual(paymentRounds(['-1', 'a1', '-2', 'a2', '-3'], paymentOf), [['-1', 'a1', '-2', '-3'], ['a2']]);
});

test('the same payment id under two providers is two payments', () => {
  const both = [
    { provider: 'stripe', paymentId: 'p' },
    { provider: 'razorpay', paymentId: 'p' },
  ];
  assert.deepEqual(
    paymentRounds(both, (payment) => payment),
    [both],
  );
});

test('no events, no rounds', () => {
  assert.deepEqual(paymentRounds([], paymentOf), []);
});
