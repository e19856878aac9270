import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import Database from 'better-sqlite3';
import { Kysely, sql, SqliteDialect } from 'kysely';
import { compiledRowsStatement, compiledStatement } from '../../../src/db/compiled-statement.js';

interface Tables {
  items: { id: number; name: string; size: number; note: string | null };
}

let db: Kysely<Tables>;

before(async () => {
  db = new Kysely<Tables>({ dialect: new SqliteDialect({ database: new Database(':memory:') }) });
  await sql`create table items (id integer primary key, name text not null unique, size integer not null, note text)`.execute(db);
});
after(() => db.destroy());

test('compiled once, run with each call’s values; constants stay as built; a placeholder may appear twice', async () => {
  const insert = compiledStatement<{ name: string; size: number }, unknown, Tables>(db, (db, value) =>
    db
      .insertInto('items')
      .orIgnore()
      .columns(['name', 'size', 'note'])
      .expression(
        db
          .selectNoFrom([sql.val(value('name')).as('name'), sql.val(value('size')).as('size'), sql.val('built in').as('note')])
          .where((eb) => eb.not(eb.exists(eb.selectFrom('items').select('id').where('name', '=', value('name'))))),
      ),
  );
  const first = await insert({ name: 'a', size: 1 });
  const second = await insert({ name: 'b', size: 2 });
  const again = await insert({ name: 'a', size: 9 });
  assert.equal(first.numAffectedRows, 1n);
  assert.equal(second.numAffectedRows, 1n);
  assert.equal(again.numAffectedRows, 0n);
  const rows = await db.selectFrom('items').select(['name', 'size', 'note']).orderBy('name').execute();
  assert.deepEqual(rows, [
    { name: 'a', size: 1, note: 'built in' },
    { name: 'b', size: 2, note: 'built in' },
  ]);

  const byName = compiledStatement<{ name: string }, { size: number }, Tables>(db, (db, value) => db.selectFrom('items').select('size').where('name', '=', value('name')));
  assert.deepEqual((await byName({ name: 'b' })).rows, [{ size: 2 }]);
  assert.deepEqual((await byName({ name: 'zz' })).rows, []);
});

test('a placeholder inlined into the SQL text, or not used as a parameter, is refused when compiled', () => {
  assert.throws(
    () =>
      compiledStatement<{ name: string }, unknown, Tables>(db, (db, value) =>
        db
          .selectFrom('items')
          .select('id')
          .where('name', '=', sql.lit(value('name'))),
      ),
    /inlined into the SQL text/,
  );
  assert.throws(
    () =>
      compiledStatement<{ name: string }, unknown, Tables>(db, (db, value) => {
        value('name');
        return db.selectFrom('items').select('id');
      }),
    /placeholder name is not a parameter/,
  );
});

test('a statement around a row part: compiled for one row, run for any number, each row with its own values', async () => {
  const insertRows = compiledRowsStatement<{ name: string; size: number }, ReturnType<typeof rowPart>, { name: string }, Tables>(
    db,
    (db, value) => rowPart(db, value),
    (db, part) => db.insertInto('items').orIgnore().columns(['name', 'size', 'note']).expression(part).returning('name'),
    ' union all ',
  );
  function rowPart(db: Kysely<Tables>, value: (name: 'name' | 'size') => never) {
    return db
      .selectNoFrom([sql.val(value('name')).as('name'), sql.val(value('size')).as('size'), sql.val('rows').as('note')])
      .where((eb) => eb.not(eb.exists(eb.selectFrom('items').select('id').where('name', '=', value('name')))));
  }
  const inserted = await insertRows([
    { name: 'r1', size: 1 },
    { name: 'a', size: 5 },
    { name: 'r2', size: 2 },
    { name: 'r3', size: 3 },
  ]);
  assert.deepEqual(inserted.rows.map((r) => r.name).sort(), ['r1', 'r2', 'r3'], 'the row that existed is skipped, the others returned');
  const stored = await db.selectFrom('items').select(['name', 'size', 'note']).where('name', 'like', 'r%').orderBy('name').execute();
  assert.deepEqual(
    stored,
    [1, 2, 3].map((n) => ({ name: `r${n}`, size: n, note: 'rows' })),
  );
  assert.deepEqual((await insertRows([{ name: 'r4', size: 4 }])).rows, [{ name: 'r4' }]);
  assert.throws(() => insertRows([]), /at least one row/);
  // A statement that leaves the row part out is refused when compiled.
  assert.throws(
    () =>
      compiledRowsStatement<{ name: string }, ReturnType<typeof rowPart>, unknown, Tables>(
        db,
        (db, value) => rowPart(db, value as never),
        (db) => db.selectFrom('items').select('id'),
        ' union all ',
      ),
    /placeholder name is not a parameter/,
  );
});
