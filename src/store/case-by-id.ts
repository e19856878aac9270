import { sql, type RawBuilder } from 'kysely';

/**
 * `CASE id WHEN … THEN … END`: each row's own value of one column, so that a single UPDATE can
 * write a batch of rows that differ in it (outcomes, statuses). Every row the UPDATE touches must
 * be listed: any other row would get NULL.
 */
export function caseById<T>(values: Array<[id: number, value: T]>): RawBuilder<T> {
  return sql<T>`case id ${sql.join(values.map(([id, value]) => sql`when ${id} then ${value}`), sql` `)} end`;
}
