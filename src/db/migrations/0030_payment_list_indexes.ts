import type { Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';

/**
 * The payments list (dashboard, admin API, `payments list`) pages newest first through (updated_at,
 * id) under each filter, as the event list does through (created_at, id): one index per filter that
 * ends in the keyset, so a page reads its own rows and no more, however deep. An e-mail has a handful
 * of payments, sorted after they are found. On PostgreSQL the time index is on updated_at alone, for
 * the reason migration 0019 gives for created_at.
 */
export function paymentListIndexes(types: ColumnTypes): Migration {
  return {
    async up(db) {
      const indexes: Array<[string, string[]]> = [
        ['ix_payments_updated', types.dialect === 'postgres' ? ['updated_at'] : ['updated_at', 'id']],
        ['ix_payments_provider_updated', ['provider', 'updated_at', 'id']],
        ['ix_payments_status_updated', ['status', 'updated_at', 'id']],
        ['ix_payments_email', ['email']],
      ];
      for (const [name, columns] of indexes) await db.schema.createIndex(name).on('payments').columns(columns).execute();
    },
  };
}
