import type Database from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/**
 * How many distinct SQL texts stay prepared per open file. The store runs a few dozen shapes (record
 * batches come in a few sizes); the bound only stops statements built from free input, such as an
 * operator's filters, from piling up.
 */
export const CACHED_STATEMENTS = 128;

/**
 * The file's database as kysely sees it, with each SQL text prepared once and its statement reused.
 * kysely prepares anew for every query, and a better-sqlite3 statement's native memory is released
 * only when the garbage collector gets to its wrapper, so under load the process held megabytes of
 * statements waiting for a collection, and parsed the same SQL again for every batch.
 *
 * Must stay true: a statement is never used by two queries at once. kysely runs one query at a time
 * on the file's one connection; the exception is a stream, whose statement stays busy until its
 * iterator ends, so a query meeting a busy statement gets one of its own.
 */
export function cachingStatements(database: Database.Database, capacity = CACHED_STATEMENTS): SqliteDatabase {
  // A Map keeps insertion order: a hit moves its entry to the end, so the first is the least recently used.
  const statements = new Map<string, Database.Statement>();
  return {
    prepare(sql: string): SqliteStatement {
      const cached = statements.get(sql);
      if (cached?.busy) return database.prepare(sql);
      if (cached) {
        statements.delete(sql);
        statements.set(sql, cached);
        return cached;
      }
      const statement = database.prepare(sql);
      statements.set(sql, statement);
      if (statements.size > capacity) statements.delete(statements.keys().next().value!);
      return statement;
    },
    close() {
      statements.clear();
      database.close();
    },
  };
}
