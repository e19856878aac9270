import type { Config } from '../config/settings.js';
import { definePaymentDomain } from '../extension/payment-domain.js';
import { NotConfigured, type OutboxTransports } from '../outbox/transport.js';
import { httpFulfilment } from './fulfilment-http.js';
import { COURSE_EFFECTS, coursePlatformHandlers } from './handlers.js';
import { coursePlatformMigrations } from './migrations.js';
import { smtpReceipts } from './receipt-email.js';
import type { CoursePlatformDatabase } from './schema.js';

/** The course platform's transports, as configured: a missing one skips its rows, visibly. */
export function courseTransports(config: Config): OutboxTransports {
  const { smtp, fulfilment, concurrency } = config.outbox;
  const noFulfilment = new NotConfigured('FULFILLMENT_URL is not set');
  return {
    [COURSE_EFFECTS.receipt]: smtp ? smtpReceipts(smtp, concurrency) : new NotConfigured('SMTP_URL is not set'),
    [COURSE_EFFECTS.fulfilment]: fulfilment ? httpFulfilment(fulfilment, 'fulfil') : noFulfilment,
    [COURSE_EFFECTS.cancellation]: fulfilment ? httpFulfilment(fulfilment, 'cancel') : noFulfilment,
  };
}

/**
 * The reference business as one optional domain: orders and enrollments (its own tables), receipts
 * and fulfilment requests (its outbox kinds). The service runs it unless COURSE_PLATFORM=false; an
 * embedding application lists it in `domains` where it wants it.
 */
export const coursePlatform = definePaymentDomain<CoursePlatformDatabase>({
  name: 'course-platform',
  migrations: coursePlatformMigrations,
  handlers: coursePlatformHandlers,
  transports: courseTransports,
});
