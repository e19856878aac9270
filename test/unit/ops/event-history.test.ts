import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { EventOutcome } from '../../../src/model/outcome.js';
import { processingsOf, type ReplayRow } from '../../../src/ops/event-history.js';

let nextId = 1;
/** A replay's row: `madeDue` when it reset the event, `replaced` the processing it kept. */
function replay(actor: string, requestedAt: string, madeDue: boolean, replaced?: { outcome: string; detail?: string; processedAt: string }): ReplayRow {
  return {
    id: nextId++,
    event_row_id: 1,
    provider: 'stripe',
    event_id: 'evt_1',
    actor,
    reason: `${actor}'s reason`,
    previous_status: replaced ? 'processed' : 'failed',
    previous_attempts: 1,
    previous_error: null,
    previous_outcome: replaced?.outcome ?? null,
    previous_outcome_detail: replaced?.detail ?? null,
    previous_processed_at: replaced?.processedAt ?? null,
    previous_claimed_at: null,
    previous_owner: replaced ? 'host:1:aaaaaaaa' : null,
    made_due_at: madeDue ? requestedAt : null,
    result: null,
    requested_at: requestedAt,
    finished_at: null,
  };
}

const row = {
  status: 'processed' as const,
  outcome: 'third',
  outcome_detail: null,
  processed_at: '2026-01-01 00:00:09.000',
  claimed_at: '2026-01-01 00:00:08.000',
  attempts: 1,
  lease_owner: 'host:2:bbbbbbbb',
};

describe('processingsOf', () => {
  test('each processing a replay replaced, then the row, each credited to the replay that made the event due before it', () => {
    const replays = [
      replay('alice', '2026-01-01 00:00:02.000', true, { outcome: 'first', processedAt: '2026-01-01 00:00:01.000' }),
      // Asked while the event was processed again, and found it changed: it replaced nothing, made nothing due.
      replay('mallory', '2026-01-01 00:00:03.000', false, { outcome: 'first', processedAt: '2026-01-01 00:00:01.000' }),
      replay('bob', '2026-01-01 00:00:04.000', true, { outcome: 'second', processedAt: '2026-01-01 00:00:03.500' }),
      // The processing bob asked for failed; carol's replay of the failed event ran the third.
      replay('carol', '2026-01-01 00:00:06.000', true),
    ];
    const processings = processingsOf(row, replays);
    assert.deepEqual(
      processings.map((p) => [p.outcome, p.processedAt.toISOString(), p.replay?.actor ?? null]),
      [
        ['first', '2026-01-01T00:00:01.000Z', null],
        ['second', '2026-01-01T00:00:03.500Z', 'alice'],
        ['third', '2026-01-01T00:00:09.000Z', 'carol'],
      ],
    );
    assert.deepEqual(processings[2], {
      outcome: 'third',
      outcomeDetail: null,
      processedAt: new Date('2026-01-01T00:00:09.000Z'),
      startedAt: new Date('2026-01-01T00:00:08.000Z'),
      attempt: 1,
      worker: 'host:2:bbbbbbbb',
      replay: { actor: 'carol', reason: "carol's reason", requestedAt: new Date('2026-01-01T00:00:06.000Z') },
    });
  });

  test('a row that is not processed holds no processing (a failed row keeps an earlier outcome)', () => {
    const replays = [replay('alice', '2026-01-01 00:00:02.000', true, { outcome: 'first', processedAt: '2026-01-01 00:00:01.000' })];
    assert.deepEqual(
      processingsOf({ ...row, status: 'failed', outcome: 'first' }, replays).map((p) => p.outcome),
      ['first'],
    );
    assert.deepEqual(processingsOf({ ...row, status: 'received', outcome: null, processed_at: null }, []), []);
  });

  test('a processing stored with its structured outcome gives it, said in words by outcomeText; one stored as text only gives its text', () => {
    const applied: EventOutcome = { kind: 'applied', paymentId: 'pi_1', from: null, to: 'captured', detailsCompleted: false };
    const stale: EventOutcome = { kind: 'stale', paymentId: 'pi_1', state: 'captured', reported: 'captured', detailsCompleted: true };
    const replays = [
      replay('alice', '2026-01-01 00:00:02.000', true, { outcome: 'text written before', processedAt: '2026-01-01 00:00:01.000' }),
      replay('bob', '2026-01-01 00:00:04.000', true, { outcome: 'applied: payment pi_1 captured', detail: JSON.stringify(applied), processedAt: '2026-01-01 00:00:03.000' }),
    ];
    const processings = processingsOf({ ...row, outcome: 'ignored: payment already captured (details completed)', outcome_detail: JSON.stringify(stale) }, replays);
    assert.deepEqual(
      processings.map((p) => [p.outcome, p.outcomeDetail]),
      [
        ['text written before', null],
        ['applied: payment pi_1 captured', applied],
        ['ignored: payment already captured (details completed)', stale],
      ],
    );
    const edited = processingsOf({ ...row, outcome: 'by hand', outcome_detail: '{"kind":"applied"}' }, []);
    assert.deepEqual(
      edited.map((p) => [p.outcome, p.outcomeDetail]),
      [['by hand', null]],
      'a structured form that is not an outcome reads as none',
    );
  });
});
