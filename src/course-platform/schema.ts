import type { Generated } from 'kysely';
import type { DbTime, InboxDatabase } from '../db/schema.js';

/** The course platform's tables (docs/how-it-works.md, Data model); they exist where it is used. */
export interface OrdersTable {
  id: Generated<number>;
  provider: string;
  payment_id: string;
  user_id: string | null;
  course_id: string | null;
  amount: number | null;
  currency: string | null;
  status: 'paid' | 'refunded';
  created_at: DbTime;
  updated_at: DbTime;
}

export interface EnrollmentsTable {
  id: Generated<number>;
  user_id: string;
  course_id: string;
  status: 'active' | 'revoked';
  provider: string;
  payment_id: string;
  created_at: DbTime;
  updated_at: DbTime;
}

/** The database as the course platform sees it: the inbox's tables and its own. */
export interface CoursePlatformDatabase extends InboxDatabase {
  orders: OrdersTable;
  enrollments: EnrollmentsTable;
}

/** Its own tables alone, to add to a transaction's type (`tx.withTables<CoursePlatformTables>()`). */
export type CoursePlatformTables = Pick<CoursePlatformDatabase, 'orders' | 'enrollments'>;
