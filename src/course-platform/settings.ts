import type { SettingsReader } from '../config/environment.js';
import type { Config } from '../config/settings.js';
import type { Payment } from '../domain/payments.js';
import { MAX_KEY_LENGTH, unstorableText, type ProviderName } from '../model/delivery.js';
import { metadataString } from '../model/payment-event.js';
import { PermanentError } from '../errors.js';

export interface FulfilmentSettings {
  url: string;
  timeoutMs: number;
}

/** The metadata keys a provider's payments carry the buyer under. */
export interface BuyerFields {
  user: string;
  course: string;
}

/** The course platform's own settings, read with the inbox's (readCoursePlatformSettings). */
export interface CoursePlatformSettings {
  /** COURSE_PLATFORM: whether `webhook-inbox` (serve, worker and the commands) runs it; an application runs the domains it lists. */
  inService: boolean;
  /** MAIL_FROM: the receipts' sender, sent through the inbox's SMTP_URL; null: receipts are skipped. */
  mailFrom: string | null;
  /** FULFILLMENT_URL, FULFILLMENT_TIMEOUT_MS; null: fulfilment requests are skipped. */
  fulfilment: FulfilmentSettings | null;
  /** Where each provider's payments carry who bought which course. */
  buyerFields: Record<ProviderName, BuyerFields>;
}

/** The merchant's fields of a PayU transaction, which the payment's metadata holds. */
const PAYU_FIELDS = ['udf1', 'udf2', 'udf3', 'udf4', 'udf5'] as const;

/** The course platform's variables; every problem is named by its variable, with the inbox's. */
export function readCoursePlatformSettings(read: SettingsReader): CoursePlatformSettings {
  const inService = read.boolean('COURSE_PLATFORM', true);
  const mailFrom = read.mailAddress('MAIL_FROM') ?? null;
  if (read.isSet('SMTP_URL') && !read.isSet('MAIL_FROM')) read.problem("MAIL_FROM must be set when SMTP_URL is set (the receipts' sender address)");
  if (read.isSet('MAIL_FROM') && !read.isSet('SMTP_URL')) read.problem('SMTP_URL must be set when MAIL_FROM is set');
  const fulfilmentUrl = read.url('FULFILLMENT_URL', ['http:', 'https:'], 'https://fulfilment.example/orders');
  const fulfilmentTimeoutMs = read.integer('FULFILLMENT_TIMEOUT_MS', 10_000, { min: 100, max: 600_000 });
  const payuUser = read.oneOf('COURSE_PLATFORM_PAYU_USER_FIELD', PAYU_FIELDS, 'udf1');
  const payuCourse = read.oneOf('COURSE_PLATFORM_PAYU_COURSE_FIELD', PAYU_FIELDS, 'udf2');
  if (payuUser === payuCourse) {
    read.problem(`COURSE_PLATFORM_PAYU_USER_FIELD and COURSE_PLATFORM_PAYU_COURSE_FIELD must name two different fields (both are ${payuUser})`);
  }
  const metadataKeys = { user: 'user_id', course: 'course_id' };
  return {
    inService,
    mailFrom,
    fulfilment: fulfilmentUrl ? { url: fulfilmentUrl, timeoutMs: fulfilmentTimeoutMs } : null,
    buyerFields: { stripe: metadataKeys, razorpay: metadataKeys, payu: { user: payuUser, course: payuCourse } },
  };
}

/** The domain's name: its migrations are recorded under it, its settings kept by it. */
export const COURSE_PLATFORM_NAME = 'course-platform';

/** Its settings in a configuration read with it (loadConfig's `domains`); undefined in one read without. */
export function coursePlatformSettings(config: Config): CoursePlatformSettings | undefined {
  return config.domainSettings[COURSE_PLATFORM_NAME] as CoursePlatformSettings | undefined;
}

/** Who bought which course, as the payment's metadata says; null where it does not say. */
export interface Buyer {
  userId: string | null;
  courseId: string | null;
}

/** The buyer a payment names, read from its metadata under the provider's fields, trimmed. */
export function buyerOf(payment: Pick<Payment, 'provider' | 'metadata'>, fields: CoursePlatformSettings['buyerFields']): Buyer {
  const keys = Object.hasOwn(fields, payment.provider) ? fields[payment.provider as ProviderName] : null;
  if (!keys) return { userId: null, courseId: null };
  return { userId: metadataString(payment.metadata[keys.user]), courseId: metadataString(payment.metadata[keys.course]) };
}

/**
 * The buyer as its rows store it. MySQL's INSERT IGNORE would store the first 255 characters, and
 * both drivers a lone surrogate as U+FFFD: another user's or course's key. Refused instead, for an
 * operator, naming the metadata key it was read from.
 */
export function storableBuyer(payment: Payment, fields: CoursePlatformSettings['buyerFields']): Buyer {
  const buyer = buyerOf(payment, fields);
  const keys = fields[payment.provider as ProviderName];
  for (const [name, key] of [
    ['userId', keys?.user],
    ['courseId', keys?.course],
  ] as const) {
    const value = buyer[name];
    const unstorable = value === null ? null : unstorableText(value, MAX_KEY_LENGTH);
    if (unstorable) throw new PermanentError(`the payment's ${name} ${unstorable}, so it cannot be stored whole (metadata ${key})`);
  }
  return buyer;
}
