import type { InsertQueryBuilder, InsertResult, Kysely } from 'kysely';

/**
 * Runs an insert of one row and returns the id the database gave it, on every store: through
 * RETURNING where kysely's adapter has it (PostgreSQL, SQLite), else through the driver's insert id
 * (MySQL). PostgreSQL has no insert id, so code that reads `insertId` learns nothing there. Whether
 * the dialect has RETURNING is kysely's own adapter's answer (`getExecutor()`, which its plugins use).
 */
export async function insertReturningId<DB, Table extends keyof DB & string>(db: Kysely<DB>, insert: InsertQueryBuilder<DB, Table, InsertResult>): Promise<number> {
  if (db.getExecutor().adapter.supportsReturning) {
    const row = (await insert.returning('id' as never).executeTakeFirstOrThrow()) as { id: number | string | bigint };
    return Number(row.id);
  }
  const { insertId } = await insert.executeTakeFirstOrThrow();
  if (insertId === undefined) throw new Error('the database gave no id for the inserted row');
  return Number(insertId);
}
