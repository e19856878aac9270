import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';

const SRC = path.resolve(import.meta.dirname, '../../../src');

/** The tables that hold an event's state: its row, its body, its failed attempts, its archived key, its payment's lease. */
const EVENT_TABLES = ['webhook_events', 'webhook_event_bodies', 'event_attempts', 'archived_event_keys', 'payment_leases'];

const sources = () =>
  readdirSync(SRC, { recursive: true, encoding: 'utf8' })
    .filter((file) => file.endsWith('.ts'))
    .map((file) => ({ file: file.split(path.sep).join('/'), text: readFileSync(path.join(SRC, file), 'utf8') }));

/** A write to one of the event tables, through the query builder or in SQL text. */
const writesEventState = new RegExp(
  [
    String.raw`\.(?:updateTable|insertInto|deleteFrom|replaceInto|mergeInto)\(\s*['"\x60](?:${EVENT_TABLES.join('|')})['"\x60]`,
    String.raw`\b(?:update|insert\s+(?:ignore\s+)?into|delete\s+from)\s+["\x60]?(?:${EVENT_TABLES.join('|')})\b`,
  ].join('|'),
  'i',
);

test("one writer of event state: outside the store and the database's own folder (record procedures, migrations), no src/ file writes an event table", () => {
  const files = sources();
  assert.ok(files.length > 100, `${files.length} files under src/`);
  // Checked against the files that must match, so that a pattern that stopped matching fails here.
  for (const writer of ['store/operator-writes.ts', 'store/complete.ts', 'store/claim.ts']) {
    assert.match(files.find((f) => f.file === writer)!.text, writesEventState, `${writer} writes event state`);
  }
  // ops/copy writes whole installations table by table (names from its plan, not written here), into
  // a database no inbox serves while it runs.
  const writers = files.filter(({ file, text }) => !/^(store|db)\//.test(file) && writesEventState.test(text)).map(({ file }) => file);
  assert.deepEqual(writers, []);
});

test('the admin routes hold no query: /admin reads through AdminReads and acts through AdminActions', () => {
  const routes = sources().filter(({ file }) => file.startsWith('http/'));
  assert.ok(routes.length > 10);
  const querying = routes.filter(({ text }) => /from 'kysely'|\.selectFrom\(|\.database\b|\bdashboard\.db\b/.test(text)).map(({ file }) => file);
  assert.deepEqual(querying, []);
});
