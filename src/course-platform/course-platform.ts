import type { Config } from '../config/settings.js';
import { definePaymentDomain } from '../extension/payment-domain.js';
import { NotConfigured, type OutboxTransports } from '../outbox/transport.js';
import { httpFulfilment } from './fulfilment-http.js';
import { COURSE_EFFECTS, coursePlatformHandlers, paymentEffectKeys } from './handlers.js';
import { coursePlatformMigrations } from './migrations.js';
import { describeCoursePayment, eraseCourseBuyer } from './payment-rows.js';
import { smtpReceipts } from './receipt-email.js';
import type { CoursePlatformDatabase } from './schema.js';
import { COURSE_PLATFORM_NAME, readCoursePlatformSettings, type CoursePlatformSettings } from './settings.js';

/**
 * The course platform's transports, as configured: receipts through the inbox's SMTP_URL from its
 * MAIL_FROM, fulfilment requests to its FULFILLMENT_URL. A missing one skips its rows, visibly.
 */
export function courseTransports(config: Config, settings: CoursePlatformSettings): OutboxTransports {
  const { smtp, concurrency } = config.outbox;
  const { mailFrom, fulfilment } = settings;
  const noFulfilment = new NotConfigured('FULFILLMENT_URL is not set');
  const receipts = !smtp ? new NotConfigured('SMTP_URL is not set') : mailFrom ? smtpReceipts(smtp, mailFrom, concurrency) : new NotConfigured('MAIL_FROM is not set');
  return {
    [COURSE_EFFECTS.receipt]: receipts,
    [COURSE_EFFECTS.fulfilment]: fulfilment ? httpFulfilment(fulfilment, 'fulfil') : noFulfilment,
    [COURSE_EFFECTS.cancellation]: fulfilment ? httpFulfilment(fulfilment, 'cancel') : noFulfilment,
  };
}

/**
 * The reference business as one optional domain: orders and enrollments (its own tables), receipts
 * and fulfilment requests (its outbox kinds), its settings (receipts' sender, fulfilment, where the
 * payments' metadata names the buyer). `webhook-inbox` runs it unless COURSE_PLATFORM=false; an
 * embedding application lists it in `domains` (and in loadConfig's) where it wants it.
 */
export const coursePlatform = definePaymentDomain<CoursePlatformDatabase, CoursePlatformSettings>({
  name: COURSE_PLATFORM_NAME,
  settings: readCoursePlatformSettings,
  migrations: coursePlatformMigrations,
  handlers: coursePlatformHandlers,
  transports: courseTransports,
  outboxKinds: {
    [COURSE_EFFECTS.receipt]: 'receipt e-mail',
    [COURSE_EFFECTS.fulfilment]: 'fulfilment request',
    [COURSE_EFFECTS.cancellation]: 'fulfilment cancellation',
  },
  paymentOutbox: ({ provider, paymentId }) => ({ keys: paymentEffectKeys(provider, paymentId) }),
  providerOutboxPrefixes: (provider) => paymentEffectKeys(provider, ''),
  describePayment: describeCoursePayment,
  erase: eraseCourseBuyer,
});
