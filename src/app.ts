import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config/settings.js';
import { maskUrl } from './config/display.js';
import { describeError } from './errors.js';
import { coursePlatform } from './domain/course-platform.js';
import { paymentApplier, type EventApplier, type PaymentHandlers } from './domain/applier.js';
import { installErrorHandling } from './http/errors.js';
import { opsRoutes } from './http/ops-routes.js';
import { echoRequestId, requestId } from './http/request-id.js';
import { httpServerOptions, routeEveryMethod } from './http/server-options.js';
import { webhookRoutes } from './http/webhook-routes.js';
import { Inbox } from './inbox.js';
import { scheduleOperations } from './ops/schedule.js';
import { createLogger } from './observability/logger.js';
import type { InboxMetrics } from './observability/metrics.js';
import { PrometheusMetrics } from './observability/prometheus.js';
import { Readiness, storeChecks, type ReadinessCheck } from './observability/readiness.js';
import { createOutboxDispatcher } from './outbox/open-outbox.js';
import { OutboxStore } from './outbox/outbox-store.js';
import type { OutboxTransports } from './outbox/transport.js';
import { Processor } from './processing/processor.js';
import { Sweeper } from './processing/sweeper.js';
import { WorkerPool } from './processing/worker-pool.js';
import { BackgroundWorkers } from './processing/background-workers.js';
import { ProviderRegistry } from './providers/registry.js';
import { openQueue } from './queue/open-queue.js';
import { openStore } from './store/open-store.js';
import type { InboxStore } from './store/inbox-store.js';

export interface InboxOptions {
  clock?: Clock;
  logger?: Logger;
  /** Business handlers per payment state; defaults to the course-platform reference domain. */
  handlers?: PaymentHandlers;
  /** Replaces the payment pipeline entirely, for events that are not about payments. */
  apply?: EventApplier;
  /** Defaults to Prometheus metrics in a registry of this inbox's own. */
  metrics?: InboxMetrics;
  /** Checks GET /readyz runs besides the store's (a queue, say); `inbox.readiness.add` works too. */
  readinessChecks?: ReadinessCheck[];
  /** Outbox transports by kind, added to (or replacing) the course platform's receipt and fulfilment. */
  transports?: OutboxTransports;
}

/** The composition root: every dependency is chosen here, once. */
export function createInbox(config: Config, options: InboxOptions = {}): Inbox {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.logLevel);
  const store = openStore(config.databaseUrl, { poolSize: config.dbPoolSize, recordConnections: config.dbRecordConnections, clock });
  const outbox = new OutboxStore(store.db, clock);
  const metrics = options.metrics ?? new PrometheusMetrics({ stats: () => store.pipelineStats(), outboxStats: () => outbox.countByStatus(), clock, logger });
  const readiness = new Readiness(logger);
  for (const check of [...storeChecks(store), ...(options.readinessChecks ?? [])]) readiness.add(check);
  const providers = new ProviderRegistry(config.providers);
  const apply = options.apply ?? paymentApplier({ toCanonical: providers.toCanonical, handlers: options.handlers ?? coursePlatform, clock });
  const { processing } = config;
  const owner = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  const processor = new Processor({
    store,
    apply,
    owner,
    leaseMs: processing.leaseMs,
    retry: { maxAttempts: processing.maxAttempts, baseMs: processing.retryBaseMs, maxMs: processing.retryMaxMs },
    clock,
    logger,
    metrics,
    // Whether the attempt came from a worker or an inline request, the waiting event goes to this
    // process's workers.
    handOff: (id) => pool.enqueue(id),
  });
  const pool = new WorkerPool((id) => processor.process(id), processing.concurrency, logger);
  const queue = openQueue(config.redis, { consumer: owner, leaseMs: processing.leaseMs, sweepIntervalMs: processing.sweepIntervalMs, logger });
  // The sweeper leaves an event to the transport for one interval: it is the fallback, not the fast path.
  const sweeper = new Sweeper(store, pool, logger, processing.sweepIntervalMs);
  const workers = new BackgroundWorkers(queue, pool, sweeper, processor, processing.sweepIntervalMs, logger);
  const inbox = new Inbox({ store, providers, processor, queue, workers, settings: processing, clock, logger, metrics, readiness });
  inbox.attach(createOutboxDispatcher(config, { store: outbox, clock, logger, owner, transports: options.transports, eventsBehind: () => pool.freeSlots <= 0 }));
  return inbox;
}

/** A fastify server with the webhook routes mounted on `inbox`; closing the server stops the inbox. */
export async function createServer(config: Config, inbox: Inbox): Promise<FastifyInstance> {
  const app = Fastify({
    // Typed as fastify's own logger, so the instance's type is the plain FastifyInstance that routes expect.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- it changes the inferred instance type
    loggerInstance: inbox.logger as FastifyBaseLogger,
    bodyLimit: config.bodyLimitBytes,
    genReqId: requestId,
    // The webhook routes log each delivery once, with its outcome; probes are not worth a line.
    logController: new LogController({ disableRequestLogging: true }),
    ...httpServerOptions(config.http),
  });
  routeEveryMethod(app);
  installErrorHandling(app);
  echoRequestId(app);
  await app.register(webhookRoutes, { inbox, bodyLimitBytes: config.bodyLimitBytes, payuBodyLimitBytes: config.payuBodyLimitBytes });
  await app.register(opsRoutes, { inbox });
  app.addHook('onClose', () => inbox.stop(config.shutdownTimeoutMs));
  return app;
}

export interface AppOptions extends InboxOptions {
  /** false: receive only (`serve --no-workers`), separate worker processes do the processing. */
  workers?: boolean;
}

/** Inbox plus server, migrated (unless disabled) and with workers running, not yet listening. */
export async function createApp(config: Config, options: AppOptions = {}): Promise<{ app: FastifyInstance; inbox: Inbox }> {
  const inbox = await openInbox(config, options);
  for (const { name, variables } of inbox.providers.unconfigured()) {
    inbox.logger.warn({ provider: name }, `${name} is not configured (set ${variables.join(' and ')}); its endpoint answers 503`);
  }
  const app = await createServer(config, inbox);
  if (options.workers !== false) inbox.start();
  const operations = scheduleOperations(config.operations, { db: inbox.store.db, clock: inbox.clock, logger: inbox.logger });
  // onClose hooks run last-added first: the jobs stop before the inbox closes the store.
  app.addHook('onClose', () => operations.stop());
  return { app, inbox };
}

/** Workers only, no HTTP (`webhook-inbox worker`): migrated (unless disabled) and running. */
export async function startWorkers(config: Config, options: InboxOptions = {}): Promise<Inbox> {
  const inbox = await openInbox(config, options);
  inbox.start();
  return inbox;
}

async function openInbox(config: Config, options: InboxOptions): Promise<Inbox> {
  const inbox = createInbox(config, options);
  if (config.migrateOnStart) {
    try {
      const applied = await migrateStore(inbox.store, config.databaseUrl);
      if (applied.length > 0) inbox.logger.info({ migrations: applied }, 'migrations applied');
    } catch (error) {
      await inbox.stop(0);
      throw error;
    }
  }
  return inbox;
}

/** Applies pending migrations; a failure is reported as a databaseFailure. */
export async function migrateStore(store: InboxStore, databaseUrl: string): Promise<string[]> {
  try {
    return await store.migrate();
  } catch (error) {
    throw databaseFailure(databaseUrl, error);
  }
}

/**
 * A database that cannot be reached or set up, as an operator must read it at start: one line naming
 * DATABASE_URL (its password masked) and what the server said.
 */
export function databaseFailure(databaseUrl: string, error: unknown): Error {
  return new Error(`cannot use DATABASE_URL ${maskUrl(databaseUrl)}: ${describeError(error)}`, { cause: error });
}
