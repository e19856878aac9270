import type { Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';

/**
 * Where an event came from: a provider's delivery, or a reconcile run that found it in the
 * provider's API.
 */
export function eventSource(types: ColumnTypes): Migration {
  return {
    async up(db) {
      // Written by the insert that records the event, never after: a reconciled event is one from the start.
      await db.schema
        .alterTable('webhook_events')
        .addColumn('source', types.shortText, (c) => c.notNull().defaultTo('delivery'))
        .execute();
    },
  };
}
