import type { Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';

/**
 * A replay keeps the processing it replaces: what the event's row said when the replay read it (its
 * outcome, when and by which worker it was processed), and when the replay made the event due again.
 * Written by the replay only, in the transaction that resets the event, so processing an event costs
 * nothing more; the event's row holds its latest processing, the replays every earlier one. Replays
 * recorded before this migration keep no outcome.
 */
export function eventProcessings(types: ColumnTypes): Migration {
  return {
    async up(db) {
      // One column per statement: SQLite's ALTER TABLE adds a single column at a time.
      const columns = [
        ['previous_outcome', types.longText],
        ['previous_processed_at', types.timestamp],
        ['previous_claimed_at', types.timestamp],
        ['previous_owner', types.key],
        ['made_due_at', types.timestamp],
      ] as const;
      for (const [name, type] of columns) await db.schema.alterTable('event_replays').addColumn(name, type).execute();
    },
  };
}
