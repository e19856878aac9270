/** The library surface: embed the inbox in another Node service, or run it as `webhook-inbox serve`. */
// First: an unsupported Node gets a clear error before anything else is loaded.
import './supported-node.js';
export { createApp, createInbox, createServer, startWorkers, type AppOptions, type InboxOptions } from './app.js';
export { loadConfig } from './config/load.js';
export { readEnvironment } from './config/environment.js';
export { type Config } from './config/settings.js';
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
export type { PaymentContext, PaymentHandler, PaymentHandlers, EventApplier } from './domain/applier.js';
export type { Payment } from './domain/payments.js';
export { coursePlatform, receiptKey, fulfilmentKey, cancellationKey, COURSE_EFFECTS, type PaymentEffect } from './domain/course-platform.js';
export { OutboxDispatcher, type DispatchCounts } from './outbox/dispatcher.js';
export { OutboxStore, type OutboxEntry, type OutboxMessage } from './outbox/outbox-store.js';
export type { Delivered, OutboxTransport, OutboxTransports } from './outbox/transport.js';
export type { PaymentEvent, PaymentState, CanonicalEvent } from './model/payment-event.js';
export type { ProviderName, RawDelivery, VerifiedEvent } from './model/delivery.js';
export type { InboxStore, InboxEvent, BusinessTransaction, CompletionBatch } from './store/inbox-store.js';
export type { InboxDatabase } from './db/schema.js';
