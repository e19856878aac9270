import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isCalendarDate, parseIsoTime, parseTimeReference } from '../../../src/config/duration.js';

test('an ISO time the calendar and the clock have: UTC unless it names an offset', () => {
  const cases: Array<[string, string]> = [
    ['2024-02-29', '2024-02-29T00:00:00.000Z'],
    ['2026-12-03T10:00:00Z', '2026-12-03T10:00:00.000Z'],
    ['2026-12-03 10:00', '2026-12-03T10:00:00.000Z'],
    ['2026-12-03t10:00:00.5z', '2026-12-03T10:00:00.500Z'],
    ['2026-12-03T10:00:00.123456789Z', '2026-12-03T10:00:00.123Z'],
    ['2026-12-03T10:00:00+05:30', '2026-12-03T04:30:00.000Z'],
    ['2026-12-03T10:00:00-0800', '2026-12-03T18:00:00.000Z'],
    ['2026-12-03T10:00+01', '2026-12-03T09:00:00.000Z'],
    ['1970-01-01', '1970-01-01T00:00:00.000Z'],
    ['9999-12-31T23:59:59+14:00', '9999-12-31T09:59:59.000Z'],
    ['9999-12-31 23:59:59.999', '9999-12-31T23:59:59.999Z'],
  ];
  for (const [text, iso] of cases) assert.equal(parseIsoTime(text)?.toISOString(), iso, text);
});

test('a field the calendar or the clock does not have, or a time outside 1970-9999 after its offset, is no time', () => {
  for (const text of [
    '2026-02-30',
    '2023-02-29',
    '2026-04-31',
    '2026-13-01',
    '2026-00-01',
    '2026-01-00',
    '2026-01-01T24:00:00Z',
    '2026-01-01T23:60:00Z',
    '2026-01-01T23:59:60Z',
    '2026-01-01T10:00:00+24:00',
    '2026-01-01T10:00:00+05:60',
    '9999-12-31T23:59:59-14:00',
    '1970-01-01T00:00:00+00:01',
    '1969-12-31',
    '0070-01-01',
    '0000-01-01',
    '+010000-01-01T00:00:00Z',
    '2026-01-01Z',
    '2026-01-01T10',
    '2026-1-1',
    ' 2026-01-01',
    'yesterday',
    '',
  ])
    assert.equal(parseIsoTime(text), null, text);
});

test('the CLI and the archive read dates through the same rule', () => {
  assert.equal(isCalendarDate('2024-02-29'), true);
  assert.equal(isCalendarDate('2024-02-30'), false);
  assert.equal(isCalendarDate('2024-02-29T00:00:00Z'), false, 'a day, not a time');
  assert.throws(() => parseTimeReference('9999-12-31T23:59:59-14:00', new Date()), /neither a duration/);
  assert.equal(parseTimeReference('2024-05-01T06:30', new Date()).toISOString(), '2024-05-01T06:30:00.000Z');
});
