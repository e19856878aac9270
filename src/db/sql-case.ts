import { sql, type Expression, type RawBuilder, type SqlBool } from 'kysely';

/*
 * CASE expressions that give each row of a batch its own value of a column, so that one UPDATE can
 * write many rows that differ in it. Built as one template: kysely's `case()` builder copies its
 * list of branches at every `when`, which makes a batch's CASE cost the square of its size.
 */

/**
 * `CASE id WHEN … THEN … END`. Every row the UPDATE touches must be listed: any other row would get
 * NULL.
 */
export function caseById<T>(values: Array<[id: number, value: T]>): RawBuilder<T> {
  return sql<T>`case id ${sql.join(
    values.map(([id, value]) => sql`when ${id} then ${value}`),
    sql` `,
  )} end`;
}

/** `CASE WHEN … THEN … ELSE otherwise END`: the value of the first branch whose condition holds. */
export function caseWhen<T>(branches: Array<[condition: Expression<SqlBool>, value: T | Expression<T>]>, otherwise: Expression<T>): RawBuilder<T> {
  return sql<T>`case ${sql.join(
    branches.map(([condition, value]) => sql`when ${condition} then ${value}`),
    sql` `,
  )} else ${otherwise} end`;
}
