import type { FastifyInstance } from 'fastify';
import type { Migration } from 'kysely';
import type { Logger } from 'pino';
import { systemClock, type Clock } from './clock.js';
import type { Config } from './config/settings.js';
import type { InboxDatabase } from './db/schema.js';
import { processOwner } from './db/lease.js';
import { maskUrl, storeLocation } from './config/display.js';
import { describeError } from './errors.js';
import { paymentApplier, type EventApplier, type PaymentHandlers } from './domain/applier.js';
import { composeDomains } from './extension/compose-domains.js';
import { definePaymentDomain, type PaymentDomain } from './extension/payment-domain.js';
import { forwarding } from './forwarding/forwarding.js';
import { AdminDashboard, adminRetentionJob } from './admin/dashboard.js';
import { DeliveryStatsRecorder } from './observability/delivery-stats.js';
import { adminRoutes } from './http/admin/admin-routes.js';
import { httpServer } from './http/http-server.js';
import { livenessRoute, opsRoutes } from './http/ops-routes.js';
import { webhookRoutes } from './http/webhook-routes.js';
import { WebhookListener } from './http/webhook-listener.js';
import type { RejectedDelivery } from './http/delivery-answer.js';
import { Inbox } from './inbox.js';
import { scheduleOperations } from './ops/schedule.js';
import { Service, type ServiceParts } from './service/service.js';
import { createLogger } from './observability/logger.js';
import type { InboxMetrics } from './observability/metrics.js';
import { PrometheusMetrics } from './observability/prometheus.js';
import { Readiness, storeChecks, type ReadinessCheck } from './observability/readiness.js';
import { createOutboxDispatcher } from './outbox/open-outbox.js';
import { OutboxStore } from './outbox/outbox-store.js';
import { skippedOutboxKinds, type OutboxTransports } from './outbox/transport.js';
import { Processor } from './processing/processor.js';
import { Sweeper } from './processing/sweeper.js';
import { WorkerPool } from './processing/worker-pool.js';
import { BackgroundWorkers } from './processing/background-workers.js';
import { ProviderRegistry } from './providers/registry.js';
import { openQueue } from './queue/open-queue.js';
import { queueEnds, type EventPublisher, type EventQueue, type EventSubscriber } from './queue/queue.js';
import { openStore } from './store/open-store.js';
import type { InboxStore } from './store/inbox-store.js';

/**
 * `DB` is the database as your handlers know it: the inbox's tables and yours
 * (`interface MyDatabase extends InboxDatabase { grants: GrantsTable }`).
 */
export interface InboxOptions<DB extends InboxDatabase = InboxDatabase> {
  clock?: Clock;
  logger?: Logger;
  /**
   * The business domains in use, each with its tables, handlers and transports (those the package
   * ships under its subpaths, yours from `definePaymentDomain`); none by default. A domain with
   * settings of its own is given to loadConfig too, which reads them.
   */
  domains?: PaymentDomain[];
  /** Your own handlers per payment state: a domain named `app`, run after those in `domains`. */
  handlers?: PaymentHandlers<DB>;
  /** Your own migrations, applied with the inbox's and recorded as `app/<name>`. */
  migrations?: Record<string, Migration>;
  /** Replaces the payment pipeline entirely, for events that are not about payments (no domain runs). */
  apply?: EventApplier;
  /** Defaults to Prometheus metrics in a registry of this inbox's own. */
  metrics?: InboxMetrics;
  /** Checks GET /readyz runs besides the store's (a queue, say); `inbox.readiness.add` works too. */
  readinessChecks?: ReadinessCheck[];
  /** Your own outbox transports by kind, added to (or replacing) those of the domains. */
  transports?: OutboxTransports;
  /**
   * How recorded events are announced to the workers, instead of the transport REDIS_URL chooses: a
   * transport with both ends (EventQueue), or one end alone, when the other runs elsewhere: a
   * publisher for an inbox that only receives, a subscriber for one whose workers hear of events
   * recorded by another (`serve` announces to its workers' thread over a message port). The end not
   * given is none: this inbox announces nothing, or its workers find events through the sweeper alone.
   */
  queue?: EventQueue | EventPublisher | EventSubscriber;
  /**
   * While it returns true, the workers start no more than WORKER_YIELD_CONCURRENCY events at a time,
   * leaving the cores to something more urgent (`serve` passes whether its request thread is busy).
   */
  yieldWhile?: () => boolean;
}

/**
 * The domains an inbox runs, in order: those the options list, forwarding when FORWARD_URL is set,
 * and the options' own handlers, migrations and transports as the `app` domain.
 */
export function inboxDomains<DB extends InboxDatabase>(config: Config, options: InboxOptions<DB>): PaymentDomain[] {
  const { domains: chosen = [], handlers, migrations, transports } = options;
  const own = handlers || migrations || transports ? [definePaymentDomain<DB>({ name: 'app', handlers, migrations, transports })] : [];
  return [...chosen, ...(config.forward ? [forwarding(config.forward)] : []), ...own];
}

/** The composition root: every dependency is chosen here, once. */
export function createInbox<DB extends InboxDatabase = InboxDatabase>(config: Config, options: InboxOptions<DB> = {}): Inbox {
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? createLogger(config.logLevel);
  const domains = composeDomains(config, inboxDomains(config, options));
  const store = openStore(config.databaseUrl, {
    poolSize: config.dbPoolSize,
    recordConnections: config.dbRecordConnections,
    clock,
    migrations: domains.migrations,
    idleTransactionTimeoutMs: config.processing.leaseMs,
    // An inline request answers after its event's processing: it does not wait for company.
    processingBatchWaitMs: config.processing.mode === 'inline' ? 0 : config.processing.batchWaitMs,
  });
  const outbox = new OutboxStore(store.db, clock);
  const counted = options.metrics ?? new PrometheusMetrics({ stats: () => store.pipelineStats(), outboxStats: () => outbox.countByStatus(), clock, logger });
  // Deliveries per minute go to the database too, so the admin overview sums every process.
  const metrics = new DeliveryStatsRecorder(counted, store.db, clock, logger, async () => {
    const [stats, outboxCounts] = await Promise.all([store.pipelineStats(), outbox.countByStatus()]);
    const oldest = stats.oldestPendingAt;
    return {
      due: stats.due,
      oldestPendingSeconds: oldest ? Math.max(0, Math.round((clock.now().getTime() - oldest.getTime()) / 1000)) : null,
      failed: stats.failed,
      stuck: stats.stuck,
      outboxFailed: outboxCounts.failed,
    };
  });
  const readiness = new Readiness(logger);
  for (const check of [...storeChecks(store), ...(options.readinessChecks ?? [])]) readiness.add(check);
  const providers = new ProviderRegistry(config.providers);
  const apply =
    options.apply ??
    paymentApplier({
      toCanonical: providers.toCanonical,
      handlers: domains.handlers,
      eventHandlers: domains.eventHandlers,
      clock,
      skippedOutboxKinds: skippedOutboxKinds(domains.transports),
    });
  const { processing } = config;
  const owner = processOwner();
  const processor = new Processor({
    store,
    apply,
    owner,
    leaseMs: processing.leaseMs,
    retry: { maxAttempts: processing.maxAttempts, baseMs: processing.retryBaseMs, maxMs: processing.retryMaxMs },
    clock,
    logger,
    metrics,
  });
  const yielding = options.yieldWhile ? { active: options.yieldWhile, concurrency: processing.yieldConcurrency } : null;
  const pool = new WorkerPool({ work: (id) => processor.process(id), concurrency: processing.concurrency, logger, yielding });
  const queue = queueEnds(options.queue ?? openQueue(config.redis, { consumer: owner, leaseMs: processing.leaseMs, sweepIntervalMs: processing.sweepIntervalMs, logger }));
  // The sweeper leaves an event to the transport for one interval: it is the fallback, not the fast path.
  const sweeper = new Sweeper({ store, workers: pool, logger, overdueMs: processing.sweepIntervalMs });
  const workers = new BackgroundWorkers({ subscriber: queue.subscriber, pool, sweeper, processor, sweepIntervalMs: processing.sweepIntervalMs, logger });
  const inbox = new Inbox({ store, database: store.db, providers, processor, queue, workers, settings: processing, clock, logger, metrics, readiness, domains });
  inbox.attach(createOutboxDispatcher(config, { store: outbox, clock, logger, owner, transports: domains.transports, eventsBehind: () => pool.freeSlots <= 0 }));
  return inbox;
}

/**
 * The service's listeners on `inbox`. `app` (HOST, PORT) answers the webhook deliveries; with
 * MANAGEMENT_PORT set, `management` (MANAGEMENT_HOST, MANAGEMENT_PORT) answers /readyz, /metrics and
 * /admin, and `app` nothing but the webhooks and /healthz. Without it, `management` is null and `app`
 * answers every route, /readyz without its checks' errors. Neither listens yet. Closing `app` stops
 * the rest in the service's order (see Service.stop): `management`, then the inbox's workers, then
 * its queue and its store.
 */
export interface InboxServers {
  app: FastifyInstance;
  management: FastifyInstance | null;
}

/** The webhook server and, when MANAGEMENT_PORT is set, the management server, for `inbox` (see InboxServers). */
export async function createServers(config: Config, inbox: Inbox): Promise<InboxServers> {
  // The inbox's workers are the caller's to start; closing `app` stops them with the rest.
  return closedWithWebhooks({ config, inbox, ...(await serviceServers(config, inbox)), processing: null, schedule: null });
}

/**
 * The servers of a service on `inbox`, and what they run besides: the dashboard's bulk replays and the
 * per-minute delivery counts. Nothing is started, and nothing stops with the servers: a Service does both.
 */
async function serviceServers(config: Config, inbox: Inbox): Promise<Pick<ServiceParts, 'management' | 'bulkReplays' | 'statistics'> & { webhooks: FastifyInstance }> {
  const stats = inbox.metrics instanceof DeliveryStatsRecorder ? inbox.metrics : null;
  const webhookOptions = {
    inbox,
    bodyLimitBytes: config.bodyLimitBytes,
    payuBodyLimitBytes: config.payuBodyLimitBytes,
    onRejected: stats ? (rejection: RejectedDelivery) => stats.rejected(rejection) : undefined,
  };
  const webhooks = new WebhookListener({ ...webhookOptions, trustProxy: config.trustProxy });
  const app = httpServer(config, inbox.logger, (fastifyHandler) => webhooks.in(fastifyHandler));
  // The deliveries the listener passes on, and every request made with app.inject().
  await app.register(webhookRoutes, webhookOptions);
  app.addHook('preClose', () => webhooks.close());
  const management = config.management ? await createManagementServer(config, inbox) : null;
  if (management) await app.register(livenessRoute);
  else await app.register(opsRoutes, { inbox });
  const dashboard = config.admin ? new AdminDashboard(inbox, config.admin, config.trustProxy, config.operations.stuckCheck) : null;
  if (config.admin && dashboard) {
    await (management ?? app).register(adminRoutes, { dashboard });
    const where = management ? ' of the management listener (MANAGEMENT_PORT)' : '';
    inbox.logger.info({ auth: config.admin.auth, tokens: config.admin.tokens.map((t) => `${t.name} (${t.role})`) }, `admin dashboard served at /admin${where}`);
  } else {
    inbox.logger.info('admin dashboard off (/admin answers 404); to turn it on set ADMIN_TOKENS=name:operator:<token of 32+ characters> (see docs/operations.md)');
  }
  return { webhooks: app, management, bulkReplays: dashboard?.actions ?? null, statistics: stats };
}

/**
 * The parts of a service that receives the webhooks on `inbox` (see ServiceParts): its servers, what
 * they run besides, and the scheduled jobs; `processing` says who processes the events.
 */
export async function receivingServiceParts(config: Config, inbox: Inbox, processing: ServiceParts['processing']): Promise<ServiceParts & { webhooks: FastifyInstance }> {
  for (const { name, variables } of inbox.providers.unconfigured()) {
    inbox.logger.warn({ provider: name }, `${name} is not configured (set ${variables.join(' and ')}); its endpoint answers 503`);
  }
  const servers = await serviceServers(config, inbox);
  const jobs = config.admin ? [adminRetentionJob(inbox.database, inbox.clock, config.admin)] : [];
  const schedule = () => scheduleOperations(config.operations, { inbox, jobs });
  return { config, inbox, ...servers, processing, schedule };
}

/**
 * The management listener's server on `inbox`: /healthz, /readyz with each failing check's error,
 * /metrics (createServers adds /admin). `webhook-inbox worker` serves it alone, when MANAGEMENT_PORT is set.
 */
export async function createManagementServer(config: Config, inbox: Inbox): Promise<FastifyInstance> {
  const management = httpServer(config, inbox.logger);
  await management.register(opsRoutes, { inbox, readinessDetails: true });
  return management;
}

/**
 * One fastify server with every route mounted on `inbox`, as createServers makes it without
 * MANAGEMENT_PORT; closing the server stops the inbox. With MANAGEMENT_PORT set, use createServers:
 * this one has no second listener to give.
 */
export async function createServer(config: Config, inbox: Inbox): Promise<FastifyInstance> {
  if (config.management) throw new Error('MANAGEMENT_PORT is set: createServers returns the management listener beside the webhook one, createServer cannot');
  return (await createServers(config, inbox)).app;
}

/** Starts the service of `parts`, whose listeners the caller opens; closing its webhook server stops the rest in order. */
function closedWithWebhooks(parts: ServiceParts & { webhooks: FastifyInstance }): InboxServers {
  const service = new Service(parts);
  service.start();
  parts.webhooks.addHook('onClose', () => service.stopBehindWebhooks(parts.config.shutdownTimeoutMs));
  return { app: parts.webhooks, management: parts.management };
}

export interface AppOptions<DB extends InboxDatabase = InboxDatabase> extends InboxOptions<DB> {
  /** false: receive only (`serve --no-workers`), separate worker processes do the processing. */
  workers?: boolean;
}

/**
 * Inbox plus servers (see InboxServers: `management` is null unless MANAGEMENT_PORT is set), migrated
 * (unless disabled), with the workers and the scheduled jobs running, not yet listening: the service
 * `serve` runs (see Service), whose stop closing `app` runs.
 */
export async function createApp<DB extends InboxDatabase = InboxDatabase>(config: Config, options: AppOptions<DB> = {}): Promise<InboxServers & { inbox: Inbox }> {
  const inbox = await openInbox(config, options);
  const servers = closedWithWebhooks(await receivingServiceParts(config, inbox, options.workers === false ? null : 'inbox'));
  return { ...servers, inbox };
}

/** Workers only, no HTTP (`webhook-inbox worker`): migrated (unless disabled) and running. */
export async function startWorkers<DB extends InboxDatabase = InboxDatabase>(config: Config, options: InboxOptions<DB> = {}): Promise<Inbox> {
  const inbox = await openInbox(config, options);
  inbox.start();
  return inbox;
}

/** An inbox as a service runs it: migrated (unless MIGRATE_ON_START=false), its store named in the log and its settings' risks warned about. */
export async function openInbox<DB extends InboxDatabase>(config: Config, options: InboxOptions<DB>): Promise<Inbox> {
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
  // Once it is in use: a store that cannot be used is named by the one line of its failure instead.
  const location = storeLocation(config.databaseUrl);
  inbox.logger.info({ store: inbox.store.backend, database: location }, `store: ${inbox.store.backend} at ${location}`);
  // Said, never refused: the operator may have chosen the risk. A database down now is met by the workers.
  const warnings = await inbox.store.settingWarnings().catch(() => []);
  for (const warning of warnings) inbox.logger.warn(warning);
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
