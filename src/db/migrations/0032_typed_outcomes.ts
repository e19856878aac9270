import type { Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';

/**
 * An event's outcome is stored structured as well as in words: `outcome_detail` (EventOutcome as
 * JSON) beside `outcome`, written by the same statement, and kept by a replay beside the outcome it
 * keeps. Rows written before stay as they are, their structured form NULL: their text cannot be read
 * back into a structured outcome with certainty (an application's own applier may have written any
 * text, and the text never said the state a payment moved from), so readers show their text.
 */
export function typedOutcomes(types: ColumnTypes): Migration {
  return {
    async up(db) {
      await db.schema.alterTable('webhook_events').addColumn('outcome_detail', types.longText).execute();
      await db.schema.alterTable('event_replays').addColumn('previous_outcome_detail', types.longText).execute();
    },
  };
}
