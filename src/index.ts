/** The library surface: embed the inbox in another Node service, or run it as `webhook-inbox serve`. */
export { createApp, createInbox, createServer, startWorkers, type AppOptions, type InboxOptions } from './app.js';
export { loadConfig, readEnvironment, type Config } from './config.js';
export { Inbox, type ReceiveResult } from './inbox.js';
export { webhookRoutes } from './http/webhook-routes.js';
export { opsRoutes } from './http/ops-routes.js';
export { createLogger } from './observability/logger.js';
export type { InboxMetrics, DeliveryResult, AttemptResult } from './observability/metrics.js';
export { PrometheusMetrics } from './observability/prometheus.js';
export type { Readiness, ReadinessCheck, ReadinessReport } from './observability/readiness.js';
export { installErrorHandling } from './http/errors.js';
export type { Clock } from './clock.js';
export * from './errors.js';
export type { PaymentContext, PaymentHandler, PaymentHandlers, EventApplier } from './domain/handlers.js';
export { coursePlatform, receiptKey } from './domain/course-platform.js';
export type { PaymentEvent, PaymentState, CanonicalEvent } from './domain/payment-event.js';
export type { ProviderName, RawDelivery, VerifiedEvent } from './providers/provider.js';
export type { InboxStore, InboxEvent, BusinessTransaction } from './store/store.js';
export type { InboxDatabase } from './store/schema.js';
