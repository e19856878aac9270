import assert from 'node:assert/strict';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import { Kysely, SqliteDialect, type Generated } from 'kysely';
import { cachingStatements } from '../../../src/db/sqlite/statement-cache.js';

/** An in-memory database whose `prepare` calls are counted, behind the cache. */
function countedDatabase(capacity: number) {
  const database = new Database(':memory:');
  database.exec('create table items (id integer primary key, name text not null)');
  const prepared: string[] = [];
  const prepare = database.prepare.bind(database);
  database.prepare = (source: string) => {
    prepared.push(source);
    return prepare(source);
  };
  return { database, cached: cachingStatements(database, capacity), prepared };
}

test('one SQL text is prepared once and its statement reused with each call’s values', () => {
  const { cached, prepared } = countedDatabase(4);
  const insert = cached.prepare('insert into items (name) values (?)');
  insert.run(['a']);
  assert.equal(cached.prepare('insert into items (name) values (?)'), insert);
  cached.prepare('insert into items (name) values (?)').run(['b']);
  assert.deepEqual(cached.prepare('select name from items order by id').all([]), [{ name: 'a' }, { name: 'b' }]);
  assert.deepEqual(prepared, ['insert into items (name) values (?)', 'select name from items order by id']);
});

test('past its capacity the least recently used statement is dropped and prepared again when next used', () => {
  const { cached, prepared } = countedDatabase(2);
  const a = cached.prepare('select 1');
  cached.prepare('select 2');
  assert.equal(cached.prepare('select 1'), a, 'a hit makes it the most recent');
  cached.prepare('select 3');
  assert.equal(cached.prepare('select 1'), a, 'select 2 was the least recent, so select 1 stayed');
  cached.prepare('select 2');
  assert.deepEqual(prepared, ['select 1', 'select 2', 'select 3', 'select 2']);
});

test('a statement still iterating is not handed out again: that query gets one of its own', () => {
  const { database, cached } = countedDatabase(4);
  database.exec("insert into items (name) values ('a'), ('b')");
  const listing = cached.prepare('select name from items order by id');
  const rows = listing.iterate([]);
  assert.deepEqual(rows.next().value, { name: 'a' });
  const meanwhile = cached.prepare('select name from items order by id');
  assert.notEqual(meanwhile, listing);
  assert.deepEqual(meanwhile.all([]), [{ name: 'a' }, { name: 'b' }]);
  assert.deepEqual(rows.next().value, { name: 'b' });
  assert.equal(rows.next().done, true);
  assert.equal(cached.prepare('select name from items order by id'), listing, 'once the iterator ends, the cached one is used again');
});

test('through kysely: queries, a transaction rolled back and a stream with queries after it all see the right rows', async () => {
  const { cached, prepared } = countedDatabase(8);
  const db = new Kysely<{ items: { id: Generated<number>; name: string } }>({ dialect: new SqliteDialect({ database: cached }) });
  try {
    for (const name of ['a', 'b', 'c']) await db.insertInto('items').values({ name }).execute();
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await trx.insertInto('items').values({ name: 'lost' }).execute();
        throw new Error('roll back');
      }),
      /roll back/,
    );
    const streamed: string[] = [];
    for await (const row of db.selectFrom('items').select('name').orderBy('id').stream()) streamed.push(row.name);
    assert.deepEqual(streamed, ['a', 'b', 'c']);
    const names = await db.selectFrom('items').select('name').orderBy('id').execute();
    assert.deepEqual(
      names.map((row) => row.name),
      ['a', 'b', 'c'],
    );
    assert.equal(prepared.filter((source) => source.startsWith('insert')).length, 1, 'the insert prepared once for all its runs');
  } finally {
    await db.destroy();
  }
});
