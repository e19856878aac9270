import { sql, type RawBuilder } from 'kysely';
import type { DbTime } from './schema.js';

/** Where a page, newest first by (time, id), ended: the next page starts after it. */
export interface KeysetPosition {
  at: DbTime;
  id: number;
}

/**
 * Rows after `position` in newest-first (timeColumn, id) order. `timeColumn <=` bounds the index
 * range; the OR only decides among rows of the boundary time, so a deep page costs what the first does.
 */
export function olderThan(timeColumn: string, position: KeysetPosition): RawBuilder<boolean> {
  const time = sql.ref(timeColumn);
  return sql<boolean>`${time} <= ${position.at} and (${time} < ${position.at} or ${sql.ref('id')} < ${position.id})`;
}
