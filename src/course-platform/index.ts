/**
 * `webhook-inbox/course-platform`: the reference business (orders, enrollments, receipts, fulfilment)
 * as a domain an application lists where it wants it, in loadConfig's `domains` (its settings) and
 * createInbox's (its tables, handlers and transports).
 * @module webhook-inbox/course-platform
 */
// First: an unsupported Node gets a clear error before anything else is loaded.
import '../supported-node.js';
export { coursePlatform, courseTransports } from './course-platform.js';
export { receiptKey, fulfilmentKey, cancellationKey, COURSE_EFFECTS, type PaymentEffect } from './handlers.js';
export type { CoursePlatformDatabase, CoursePlatformTables, OrdersTable, EnrollmentsTable } from './schema.js';
export { buyerOf, coursePlatformSettings, readCoursePlatformSettings, type Buyer, type BuyerFields, type CoursePlatformSettings, type FulfilmentSettings } from './settings.js';
