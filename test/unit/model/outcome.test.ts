import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isEventOutcome, outcomeText, parseOutcome, shownOutcome, type EventOutcome } from '../../../src/model/outcome.js';

const APPLIED: EventOutcome = { kind: 'applied', paymentId: 'pi_1', from: 'authorized', to: 'captured', detailsCompleted: true };
const CREATED: EventOutcome = { kind: 'applied', paymentId: 'pi_1', from: null, to: 'created', detailsCompleted: false };
const STALE: EventOutcome = { kind: 'stale', paymentId: 'pi_1', state: 'refunded', reported: 'captured', detailsCompleted: false };
const STALE_COMPLETING: EventOutcome = { ...STALE, detailsCompleted: true };
const IGNORED: EventOutcome = { kind: 'ignored', reason: 'unhandled event type customer.created' };
const CUSTOM: EventOutcome = { kind: 'custom', text: 'granted 3 credits' };

describe('event outcomes', () => {
  test('outcomeText says each kind as the inbox always has', () => {
    assert.deepEqual([APPLIED, CREATED, STALE, STALE_COMPLETING, IGNORED, CUSTOM].map(outcomeText), [
      'applied: payment pi_1 captured',
      'applied: payment pi_1 created',
      'ignored: payment already refunded',
      'ignored: payment already refunded (details completed)',
      'ignored: unhandled event type customer.created',
      'granted 3 credits',
    ]);
  });

  test('a stored structured outcome is shown in the words outcomeText gives, beside the structure', () => {
    for (const outcome of [APPLIED, STALE_COMPLETING, IGNORED, CUSTOM]) {
      assert.deepEqual(shownOutcome('whatever the text column says', JSON.stringify(outcome)), { outcome: outcomeText(outcome), outcomeDetail: outcome });
      assert.deepEqual(parseOutcome(JSON.stringify(outcome)), outcome);
    }
  });

  test('an outcome stored as text only (before structured outcomes), or not processed yet, is shown as its text with no structure', () => {
    assert.deepEqual(shownOutcome('applied: payment pi_1 captured', null), { outcome: 'applied: payment pi_1 captured', outcomeDetail: null });
    assert.deepEqual(shownOutcome(null, null), { outcome: null, outcomeDetail: null });
  });

  test('a structured form that is not an outcome (edited by hand, not JSON) reads as none, and the text is shown', () => {
    const broken = [
      'not json',
      'null',
      '[]',
      '"applied"',
      '{}',
      '{"kind":"applied","paymentId":"pi_1","from":null,"to":"settled","detailsCompleted":false}',
      '{"kind":"stale","paymentId":"pi_1","state":"captured"}',
      '{"kind":"ignored"}',
      '{"kind":"custom","text":3}',
      '{"kind":"other","text":"x"}',
    ];
    for (const detail of broken) {
      assert.equal(parseOutcome(detail), null, detail);
      assert.deepEqual(shownOutcome('the text', detail), { outcome: 'the text', outcomeDetail: null }, detail);
    }
  });

  test('isEventOutcome takes each kind with its fields, and nothing else', () => {
    for (const outcome of [APPLIED, CREATED, STALE, IGNORED, CUSTOM]) assert.ok(isEventOutcome(outcome), outcome.kind);
    for (const value of [
      null,
      'applied',
      { text: 'old form' },
      { kind: 'applied', paymentId: 'pi_1', from: 'created', to: 'captured' },
      { kind: 'stale', paymentId: 1, state: 'captured', reported: 'created', detailsCompleted: false },
    ]) {
      assert.equal(isEventOutcome(value), false, JSON.stringify(value));
    }
  });
});
