import assert from 'node:assert/strict';
import { test } from 'node:test';
import { appliedOutcome, type TextOutcome } from '../../../src/domain/applier.js';
import { PermanentError } from '../../../src/errors.js';
import type { EventOutcome } from '../../../src/model/outcome.js';

test("an applier's structured outcome is stored as it is; a stale one gives its payment's state to the metrics", () => {
  const applied: EventOutcome = { kind: 'applied', paymentId: 'pi_1', from: null, to: 'captured', detailsCompleted: false };
  const stale: EventOutcome = { kind: 'stale', paymentId: 'pi_1', state: 'captured', reported: 'authorized', detailsCompleted: false };
  assert.deepEqual(appliedOutcome(applied), { outcome: applied });
  assert.deepEqual(appliedOutcome(stale), { outcome: stale, staleState: 'captured' });
  assert.deepEqual(appliedOutcome({ kind: 'ignored', reason: 'no payment' }), { outcome: { kind: 'ignored', reason: 'no payment' } });
});

test("an applier's text, plain or in the form of earlier versions, is stored as a custom outcome", () => {
  assert.deepEqual(appliedOutcome('granted'), { outcome: { kind: 'custom', text: 'granted' } });
  assert.deepEqual(appliedOutcome({ text: 'granted' }), { outcome: { kind: 'custom', text: 'granted' } });
  assert.deepEqual(appliedOutcome({ text: 'already granted', staleState: 'captured' }), { outcome: { kind: 'custom', text: 'already granted' }, staleState: 'captured' });
});

test('anything else an applier returns (plain JavaScript can) fails the event for an operator, saying what came back', () => {
  const returned: unknown[] = [undefined, null, 42, {}, { kind: 'applied' }, { kind: 'granted', text: 'x' }];
  for (const value of returned) {
    assert.throws(
      () => appliedOutcome(value as TextOutcome),
      (error: unknown) => error instanceof PermanentError && /returned .*, not an outcome/.test(error.message),
      String(value),
    );
  }
});
