import type { Kysely, Migration } from 'kysely';
import { createTable, type ColumnTypes } from '../db/column-types.js';

/**
 * The course platform's tables. An installation whose 0002_course_platform created them already (it
 * did, before they became the course platform's own) keeps them as they are: they are created only
 * where they are missing, with the same columns, keys and index as there.
 */
export function coursePlatformMigrations(types: ColumnTypes): Record<string, Migration> {
  return {
    '0014_orders_and_enrollments': {
      async up(db: Kysely<unknown>) {
        const existing = new Set((await db.introspection.getTables()).map((table) => table.name));
        if (!existing.has('orders')) {
          await createTable(db.schema, types, 'orders')
            .addColumn('provider', types.shortText, (c) => c.notNull())
            .addColumn('payment_id', types.key, (c) => c.notNull())
            .addColumn('user_id', types.key)
            .addColumn('course_id', types.key)
            .addColumn('amount', types.bigint)
            .addColumn('currency', types.shortText)
            .addColumn('status', types.shortText, (c) => c.notNull())
            .addColumn('created_at', types.timestamp, (c) => c.notNull())
            .addColumn('updated_at', types.timestamp, (c) => c.notNull())
            .addUniqueConstraint('uq_orders_provider_payment', ['provider', 'payment_id'])
            .execute();
        }
        if (!existing.has('enrollments')) {
          await createTable(db.schema, types, 'enrollments')
            .addColumn('user_id', types.key, (c) => c.notNull())
            .addColumn('course_id', types.key, (c) => c.notNull())
            .addColumn('status', types.shortText, (c) => c.notNull())
            .addColumn('provider', types.shortText, (c) => c.notNull())
            .addColumn('payment_id', types.key, (c) => c.notNull())
            .addColumn('created_at', types.timestamp, (c) => c.notNull())
            .addColumn('updated_at', types.timestamp, (c) => c.notNull())
            .addUniqueConstraint('uq_enrollments_user_course', ['user_id', 'course_id'])
            .execute();
          await db.schema.createIndex('ix_enrollments_payment').on('enrollments').columns(['provider', 'payment_id']).execute();
        }
      },
    },
  };
}
