import type { Migration } from 'kysely';

/**
 * The indexes of the admin event list, one per filter, and of the outbox list by status.
 */
export function adminEventFilters(): Migration {
  return {
    async up(db) {
      // The admin event list pages newest first through (created_at, id) under each filter: one
      // index per filter, ending in the keyset, so a page reads its rows and no more.
      const indexes: Array<[string, string[]]> = [
        ['ix_webhook_events_created', ['created_at', 'id']],
        ['ix_webhook_events_provider_created', ['provider', 'created_at', 'id']],
        ['ix_webhook_events_status_created', ['status', 'created_at', 'id']],
        ['ix_webhook_events_type_created', ['event_type', 'created_at', 'id']],
        ['ix_webhook_events_payment_id', ['payment_id']],
        ['ix_webhook_events_event_id', ['event_id']],
        ['ix_outbox_status_id', ['status', 'id']],
      ];
      for (const [name, columns] of indexes)
        await db.schema
          .createIndex(name)
          .on(name.startsWith('ix_outbox') ? 'outbox' : 'webhook_events')
          .columns(columns)
          .execute();
    },
  };
}
