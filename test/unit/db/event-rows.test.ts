import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Kysely, PostgresDialect } from 'kysely';
import { EVENT_COLUMNS, selectEventRows } from '../../../src/db/event-rows.js';
import type { InboxDatabase } from '../../../src/db/schema.js';

// Statements are compiled only: the pool is asked for at the first query, which never comes.
const db = new Kysely<InboxDatabase>({ dialect: new PostgresDialect({ pool: () => Promise.reject(new Error('compile only')) }) });

test('whole events are read by naming their columns, so that PostgreSQL can hold the statement prepared', () => {
  const text = selectEventRows(db).where('webhook_events.id', 'in', [1, 2]).compile().sql;
  assert.ok(!text.includes('*'), text);
  for (const column of EVENT_COLUMNS) assert.ok(text.includes(`"webhook_events"."${column.split('.')[1]}"`), `${column} in ${text}`);
  assert.equal(new Set(EVENT_COLUMNS).size, EVENT_COLUMNS.length);
});
