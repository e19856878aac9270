import type { ExpressionBuilder, Kysely, Selectable, Transaction } from 'kysely';
import { fromDbTime, type DbTime } from '../db/schema.js';
import type { DomainSection, ErasureSelector, PaymentRef, SectionField } from '../extension/domain-hooks.js';
import type { CoursePlatformDatabase, EnrollmentsTable, OrdersTable } from './schema.js';

const isoTime = (time: DbTime) => fromDbTime(time).toISOString();

function orderFields(order: Selectable<OrdersTable>): SectionField[] {
  return [
    { label: 'Order', value: order.id },
    { label: 'Status', value: order.status, format: 'status' },
    { label: 'Amount (minor units)', value: order.amount === null ? null : Number(order.amount) },
    { label: 'Currency', value: order.currency },
    { label: 'User', value: order.user_id, format: 'code' },
    { label: 'Course', value: order.course_id, format: 'code' },
    { label: 'Created (UTC)', value: isoTime(order.created_at), format: 'time' },
    { label: 'Updated (UTC)', value: isoTime(order.updated_at), format: 'time' },
  ];
}

function enrollmentFields(enrollment: Selectable<EnrollmentsTable>): SectionField[] {
  return [
    { label: 'Enrollment', value: enrollment.id },
    { label: 'User', value: enrollment.user_id, format: 'code' },
    { label: 'Course', value: enrollment.course_id, format: 'code' },
    { label: 'Status', value: enrollment.status, format: 'status' },
    { label: 'Created (UTC)', value: isoTime(enrollment.created_at), format: 'time' },
    { label: 'Updated (UTC)', value: isoTime(enrollment.updated_at), format: 'time' },
  ];
}

/**
 * A payment's order and what it granted, for the operator's screens. An enrollment passes to another
 * payment of the same course when this one is refunded: it is then that payment's.
 */
export async function describeCoursePayment(db: Kysely<CoursePlatformDatabase>, { provider, paymentId }: PaymentRef): Promise<DomainSection[]> {
  const [order, enrollments] = await Promise.all([
    db.selectFrom('orders').selectAll().where('provider', '=', provider).where('payment_id', '=', paymentId).executeTakeFirst(),
    db.selectFrom('enrollments').selectAll().where('provider', '=', provider).where('payment_id', '=', paymentId).orderBy('id').execute(),
  ]);
  return [
    { title: 'Order', layout: 'fields', records: order ? [orderFields(order)] : [] },
    { title: 'Enrollments', layout: 'table', records: enrollments.map(enrollmentFields) },
  ];
}

/**
 * Forgets the person who made `payments`, and the users their orders name: their enrollments (what
 * they were granted, whichever payment holds it now) and those the payments granted are deleted;
 * their orders stay, for the sale they record (course, amount, state), without the user.
 */
export async function eraseCourseBuyer(tx: Transaction<CoursePlatformDatabase>, { payments }: ErasureSelector): Promise<void> {
  if (payments.length === 0) return;
  type Rows = ExpressionBuilder<CoursePlatformDatabase, 'orders' | 'enrollments'>;
  const ofPayments = (eb: Rows) => eb.or(payments.map(({ provider, paymentId }) => eb.and([eb('provider', '=', provider), eb('payment_id', '=', paymentId)])));
  const orders = await tx.selectFrom('orders').select('user_id').where(ofPayments).execute();
  const users = [...new Set(orders.flatMap((order) => (order.user_id === null ? [] : [order.user_id])))];
  const ofPerson = (eb: Rows) => eb.or([ofPayments(eb), ...(users.length > 0 ? [eb('user_id', 'in', users)] : [])]);
  await tx.deleteFrom('enrollments').where(ofPerson).execute();
  await tx.updateTable('orders').set({ user_id: null }).where(ofPerson).execute();
}
