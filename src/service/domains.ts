import type { Config } from '../config/settings.js';
import { coursePlatform } from '../course-platform/course-platform.js';
import { coursePlatformSettings } from '../course-platform/settings.js';
import type { PaymentDomain } from '../extension/payment-domain.js';

/**
 * The domains whose settings `webhook-inbox` reads with its own: the course platform's, whether it
 * runs or not, so that a bad value of its variables stops every command alike.
 */
export const SERVICE_DOMAINS: readonly PaymentDomain[] = [coursePlatform];

/** The domains `webhook-inbox` runs (serve, worker and every command): the course platform unless COURSE_PLATFORM=false. */
export function serviceDomains(config: Config): PaymentDomain[] {
  return coursePlatformSettings(config)?.inService ? [coursePlatform] : [];
}
