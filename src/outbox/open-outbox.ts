import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Config } from '../config/settings.js';
import { COURSE_EFFECTS } from '../domain/course-platform.js';
import { OutboxDispatcher } from './dispatcher.js';
import { httpFulfilment } from './fulfilment-http.js';
import type { OutboxStore } from './outbox-store.js';
import { smtpReceipts } from './receipt-email.js';
import { NotConfigured, type OutboxTransports } from './transport.js';

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

/** Rows a lane claims at a time, at most: a lane's chunk is claimed together, so fewer statements per row. */
const MAX_CLAIM_AHEAD = 4;

/**
 * The dispatcher for this process. Its lease is the processing lease plus the slowest transport's
 * timeout, so a delivery that is still allowed to run is never taken over. A lane claims as many
 * rows ahead as it could deliver within that lease if each took the full timeout.
 */
export function createOutboxDispatcher(
  config: Config,
  dependencies: { store: OutboxStore; clock: Clock; logger: Logger; owner: string; transports?: OutboxTransports; eventsBehind?: () => boolean },
): OutboxDispatcher {
  const { processing, outbox } = config;
  const transportTimeoutMs = Math.max(outbox.smtp?.timeoutMs ?? 0, outbox.fulfilment?.timeoutMs ?? 0);
  return new OutboxDispatcher({
    store: dependencies.store,
    transports: { ...courseTransports(config), ...dependencies.transports },
    owner: dependencies.owner,
    leaseMs: processing.leaseMs + transportTimeoutMs,
    retry: { maxAttempts: processing.maxAttempts, baseMs: processing.retryBaseMs, maxMs: processing.retryMaxMs },
    concurrency: outbox.concurrency,
    claimAhead: transportTimeoutMs === 0 ? MAX_CLAIM_AHEAD : Math.min(MAX_CLAIM_AHEAD, 1 + Math.floor(processing.leaseMs / transportTimeoutMs)),
    pollIntervalMs: processing.sweepIntervalMs,
    eventsBehind: dependencies.eventsBehind,
    clock: dependencies.clock,
    logger: dependencies.logger.child({ component: 'outbox' }),
  });
}
