import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import type { Config } from '../config/settings.js';
import { OutboxDispatcher } from './dispatcher.js';
import type { OutboxStore } from './outbox-store.js';
import type { OutboxTransports } from './transport.js';

/** Rows a lane claims at a time, at most: a lane's chunk is claimed together, so fewer statements per row. */
const MAX_CLAIM_AHEAD = 4;

/**
 * The dispatcher for this process. Its lease is the processing lease plus the slowest transport's
 * timeout, so a delivery that is still allowed to run is never taken over. A lane claims as many
 * rows ahead as it could deliver within that lease if each took the full timeout.
 */
export function createOutboxDispatcher(
  config: Config,
  dependencies: { store: OutboxStore; clock: Clock; logger: Logger; owner: string; transports: OutboxTransports; eventsBehind?: () => boolean },
): OutboxDispatcher {
  const { processing, outbox } = config;
  const transportTimeoutMs = Math.max(0, ...Object.values(dependencies.transports).map((transport) => transport.timeoutMs ?? 0));
  return new OutboxDispatcher({
    store: dependencies.store,
    transports: dependencies.transports,
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
