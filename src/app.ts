import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { pino, type Logger } from 'pino';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config.js';
import { coursePlatform } from './domain/course-platform.js';
import { paymentApplier, type EventApplier, type PaymentHandlers } from './domain/handlers.js';
import { installErrorHandling } from './http/errors.js';
import { webhookRoutes } from './http/webhook-routes.js';
import { Inbox } from './inbox.js';
import { scheduleOperations } from './ops/schedule.js';
import { Processor } from './processing/processor.js';
import { Sweeper } from './processing/sweeper.js';
import { WorkerPool } from './processing/worker-pool.js';
import { ProviderRegistry } from './providers/registry.js';
import { openStore } from './store/open-store.js';

export interface InboxOptions {
  clock?: Clock;
  logger?: Logger;
  /** Business handlers per payment state; defaults to the course-platform reference domain. */
  handlers?: PaymentHandlers;
  /** Replaces the payment pipeline entirely, for events that are not about payments. */
  apply?: EventApplier;
}

function createLogger(config: Pick<Config, 'logLevel'>): Logger {
  return pino({ level: config.logLevel });
}

/** The composition root: every dependency is chosen here, once. */
export function createInbox(config: Config, options: InboxOptions = {}): Inbox {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config);
  const store = openStore(config.databaseUrl, { poolSize: config.dbPoolSize, clock });
  const providers = new ProviderRegistry(config.providers);
  const apply = options.apply ?? paymentApplier({ providers, handlers: options.handlers ?? coursePlatform, clock });
  const { processing } = config;
  const processor = new Processor({
    store,
    apply,
    owner: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    leaseMs: processing.leaseMs,
    retry: { maxAttempts: processing.maxAttempts, baseMs: processing.retryBaseMs, maxMs: processing.retryMaxMs },
    clock,
    logger,
  });
  const pool = new WorkerPool((id) => processor.process(id), processing.concurrency, logger);
  const sweeper = new Sweeper(store, (id) => pool.enqueue(id), logger);
  return new Inbox(store, providers, processor, pool, sweeper, processing, clock, logger);
}

/** A fastify server with the webhook routes mounted on `inbox`; closing the server stops the inbox. */
export async function createServer(config: Config, inbox: Inbox): Promise<FastifyInstance> {
  const app = Fastify({ loggerInstance: inbox.logger as FastifyBaseLogger, bodyLimit: config.bodyLimitBytes });
  installErrorHandling(app);
  await app.register(webhookRoutes, { inbox, bodyLimitBytes: config.bodyLimitBytes });
  app.addHook('onClose', () => inbox.stop(config.shutdownTimeoutMs));
  return app;
}

/** Inbox plus server, migrated (unless disabled) and with workers running, not yet listening. */
export async function createApp(config: Config, options: InboxOptions = {}): Promise<{ app: FastifyInstance; inbox: Inbox }> {
  const inbox = createInbox(config, options);
  if (config.migrateOnStart) {
    const applied = await inbox.store.migrate();
    if (applied.length > 0) inbox.logger.info({ migrations: applied }, 'migrations applied');
  }
  for (const { name, variables } of inbox.providers.unconfigured()) {
    inbox.logger.warn({ provider: name }, `${name} is not configured (set ${variables.join(' and ')}); its endpoint answers 503`);
  }
  const app = await createServer(config, inbox);
  inbox.start();
  const operations = scheduleOperations(config.operations, { db: inbox.store.db, clock: inbox.clock, logger: inbox.logger });
  // onClose hooks run last-added first: the jobs stop before the inbox closes the store.
  app.addHook('onClose', () => operations.stop());
  return { app, inbox };
}
