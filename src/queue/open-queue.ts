import type { Logger } from 'pino';
import type { RedisSettings } from '../config/settings.js';
import { InProcessQueue } from './in-process.js';
import type { EventQueue } from './queue.js';
import { RedisStreamsQueue } from './redis-streams.js';

/** Chooses the transport once: Redis Streams when REDIS_URL is set, in-process otherwise. */
export function openQueue(redis: RedisSettings | null, options: { consumer: string; leaseMs: number; sweepIntervalMs: number; logger: Logger }): EventQueue {
  if (!redis) return new InProcessQueue();
  return new RedisStreamsQueue({
    url: redis.url,
    stream: redis.stream,
    consumer: options.consumer,
    claimIdleMs: options.leaseMs,
    reclaimIntervalMs: options.sweepIntervalMs,
    logger: options.logger,
  });
}
