import type { Migration } from 'kysely';
import { createTable, type ColumnTypes } from '../column-types.js';

/**
 * The name is historical: this migration once created the course platform's orders and
 * enrollments too. They are the course platform's own now (course-platform/migrations.ts), created
 * only where it is used; an installation that ran the old 0002 keeps them, and the course
 * platform's migration finds them there. Every installation still has what this creates now.
 */
export function paymentsAndOutbox(types: ColumnTypes): Migration {
  return {
    async up(db) {
      await createTable(db.schema, types, 'payments')
        .addColumn('provider', types.shortText, (c) => c.notNull())
        .addColumn('payment_id', types.key, (c) => c.notNull())
        .addColumn('status', types.shortText, (c) => c.notNull())
        .addColumn('amount', types.bigint)
        .addColumn('currency', types.shortText)
        .addColumn('user_id', types.key)
        .addColumn('course_id', types.key)
        .addColumn('email', types.key)
        .addColumn('created_at', types.timestamp, (c) => c.notNull())
        .addColumn('updated_at', types.timestamp, (c) => c.notNull())
        .addUniqueConstraint('uq_payments_provider_payment', ['provider', 'payment_id'])
        .execute();
      await createTable(db.schema, types, 'outbox')
        .addColumn('idempotency_key', types.key, (c) => c.notNull())
        .addColumn('kind', types.shortText, (c) => c.notNull())
        .addColumn('payload', types.longText, (c) => c.notNull())
        .addColumn('status', types.shortText, (c) => c.notNull())
        .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
        .addColumn('next_attempt_at', types.timestamp)
        .addColumn('last_error', types.longText)
        .addColumn('created_at', types.timestamp, (c) => c.notNull())
        .addColumn('sent_at', types.timestamp)
        .addUniqueConstraint('uq_outbox_idempotency_key', ['idempotency_key'])
        .execute();
      await db.schema.createIndex('ix_outbox_due').on('outbox').columns(['status', 'next_attempt_at']).execute();
    },
  };
}
