import assert from 'node:assert/strict';
import { test } from 'node:test';
import { printable, tableText } from '../../../src/cli/output.js';

test('printable shows control characters as escapes: no ANSI sequence, carriage return or bell reaches the terminal', () => {
  assert.equal(printable('pay\u001b[31mred\rover\u0007\u009b'), 'pay\\u001b[31mred\\u000dover\\u0007\\u009b');
  // Line feeds and tabs lay out multi-line text (a form payload); they are kept.
  assert.equal(printable('a=1\n\tb=2'), 'a=1\n\tb=2');
});

test('a table cell is one line with its control characters escaped', () => {
  const text = tableText([{ reason: 'line one\nline\u001b]0;title\u0007 two' }], [['reason', (row) => row.reason, 'whole']]);
  assert.equal(text.split('\n').length, 2);
  // eslint-disable-next-line no-control-regex -- the control characters a terminal would act on
  assert.ok(!/[\u0000-\u0008\u000b-\u001f]/.test(text), text);
  assert.match(text, /\\u001b\]0;title\\u0007/);
});
