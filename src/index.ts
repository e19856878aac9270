/**
 * The library surface: embed the inbox in another Node service, or run it as `webhook-inbox serve`.
 * @module webhook-inbox
 */
// First: an unsupported Node gets a clear error before anything else is loaded.
import './supported-node.js';
export { createApp, createInbox, createManagementServer, createServer, createServers, startWorkers, type AppOptions, type InboxOptions, type InboxServers } from './app.js';
export { loadConfig, type ConfigOptions, type SettingsOwner } from './config/load.js';
export { readEnvironment, type SettingsReader } from './config/environment.js';
export { Inbox, type ReceiveResult } from './inbox.js';
export { webhookRoutes } from './http/webhook-routes.js';
export { livenessRoute, opsRoutes, type OpsRoutesOptions } from './http/ops-routes.js';
export { createLogger, flushed } from './observability/logger.js';
export type { InboxMetrics, DeliveryResult, AttemptResult, AdminSignInVia, AdminSignInRefusal } from './observability/metrics.js';
export type { EventQueue, EventPublisher, EventSubscriber, EventConsumer, QueueEnds, QueueTransport } from './queue/queue.js';
export { PrometheusMetrics } from './observability/prometheus.js';
export type { InFlight } from './observability/in-flight.js';
export type { Readiness, ReadinessCheck, ReadinessReport } from './observability/readiness.js';
export { installErrorHandling } from './http/errors.js';
export { answerDelivery, type DeliveryAnswer } from './http/delivery-answer.js';
export type { Clock } from './clock.js';
export * from './errors.js';
export type { EventContext, PaymentContext, PaymentHandler, PaymentHandlers, EventHandler, EventApplier, TextOutcome } from './domain/applier.js';
export { outcomeText, type EventOutcome, type AppliedOutcome, type StaleOutcome, type IgnoredOutcome, type CustomOutcome } from './model/outcome.js';
export type { Payment } from './domain/payments.js';
export { definePaymentDomain, type PaymentDomain } from './extension/payment-domain.js';
export type { DomainSection, ErasureSelector, PaymentOutboxRows, PaymentRef, PaymentSection, SectionField } from './extension/domain-hooks.js';
export type { DomainViews } from './extension/compose-domains.js';
export { writeOutbox, type NewOutboxMessage } from './outbox/outbox-writer.js';
export { FORWARD_KIND, forwarding } from './forwarding/forwarding.js';
export type { ForwardedEvent, PaymentForwardedEvent, WebhookForwardedEvent } from './forwarding/forwarded-event.js';
export { OutboxDispatcher, type DispatchCounts } from './outbox/dispatcher.js';
export { OutboxStore, type OutboxEntry, type OutboxMessage } from './outbox/outbox-store.js';
export type { Delivered, OutboxTransport, OutboxTransports } from './outbox/transport.js';
export { headerValueOf } from './outbox/header-value.js';
export type { PaymentEvent, PaymentState, PaymentMetadata, CanonicalEvent, IgnoredEvent } from './model/payment-event.js';
export type { ProviderName, RawDelivery, VerifiedEvent } from './model/delivery.js';
export type { InboxStore, InboxEvent, BusinessTransaction, CompletionBatch } from './store/inbox-store.js';
export type { InboxDatabase, DbTime, WebhookEventsTable, WebhookEventBodiesTable, PaymentsTable, OutboxTable, OutboxStatus, EventStatus } from './db/schema.js';
export type { ColumnTypes } from './db/column-types.js';
export type { Config, ForwardSettings, ManagementSettings, OutboxSettings, SmtpSettings } from './config/settings.js';
// The query builder's types a domain's tables, migrations and handlers are written with.
export type { Generated, Insertable, Kysely, Migration, Selectable, Transaction } from 'kysely';
