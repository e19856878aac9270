import type { Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';
import { dropEventIndex } from './0022_one_status_index.js';

/**
 * Two more indexes that others serve, for the same reason as 0022. (payment_id) finds a payment's
 * events with or without its provider, a handful of rows to filter; (provider, event_id), unique,
 * finds an event id under every provider by naming them all (PROVIDER_NAMES), as (event_id) did.
 */
export function fewerEventIndexes(types: ColumnTypes): Migration {
  return {
    async up(db) {
      for (const name of ['ix_webhook_events_payment', 'ix_webhook_events_event_id']) await dropEventIndex(db, types, name);
    },
  };
}
