import type { Inbox } from '../inbox.js';
import type { KeysetPosition } from '../db/keyset.js';
import type { OperationsSettings } from '../config/settings.js';
import type { OutboxEntry, OutboxFilter, OutboxStore } from '../outbox/outbox-store.js';
import { paymentDetail, type PaymentDetail } from '../ops/payment-detail.js';
import { ReconcileRuns, type ReconcileRun } from '../ops/reconcile/runs.js';
import { findStuck, type StuckReport } from '../ops/stuck.js';
import type { AdminAction, AuditLog } from './audit.js';
import { listEvents, type EventListFilter, type EventPage } from './event-list.js';
import { eventView, type EventView } from './event-view.js';
import { overview, recentRejections, type Overview, type OverviewPeriod } from './overview.js';
import { listPayments, type PaymentListFilter, type PaymentPage } from './payment-list.js';

/** How many of an event's audited actions its detail shows. */
const EVENT_ACTIONS_SHOWN = 50;

/**
 * Everything /admin reads, in one place: the screens and the JSON API ask for the same figures
 * through the same queries. Nothing here writes; the changes an operator makes go through
 * AdminActions, and an event's state through the inbox's store.
 */
export class AdminReads {
  constructor(
    private readonly inbox: Inbox,
    private readonly audit: AuditLog,
    private readonly outbox: OutboxStore,
    /** The stuck-check thresholds, so the failed-and-stuck screen agrees with the scheduled check. */
    private readonly stuckThresholds: OperationsSettings['stuckCheck'],
  ) {}

  events(filter: EventListFilter): Promise<EventPage> {
    return listEvents(this.inbox.database, filter);
  }

  /** One event with its timeline, payment, outbox rows and the audited actions on it; null when there is none. */
  async event(id: number): Promise<EventView | null> {
    const actions = await this.audit.recent(EVENT_ACTIONS_SHOWN, `event ${id}`);
    return eventView(this.inbox.database, this.inbox.clock, this.inbox.domains, id, actions);
  }

  async eventExists(id: number): Promise<boolean> {
    return (await this.inbox.store.eventState(id)) !== null;
  }

  payments(filter: PaymentListFilter): Promise<PaymentPage> {
    return listPayments(this.inbox.database, filter);
  }

  /** One payment with its events, its domains' rows and its outbox; OperationError when nothing is known of it. */
  payment(provider: string, paymentId: string): Promise<PaymentDetail> {
    return paymentDetail(this.inbox.database, this.inbox.clock, this.inbox.domains, provider, paymentId);
  }

  overview(period: OverviewPeriod): Promise<Overview> {
    return overview(this.inbox.database, this.inbox.store, () => this.outbox.countByStatus(), this.inbox.clock, period);
  }

  stuck(): Promise<StuckReport> {
    return findStuck(this.inbox.database, this.inbox.clock, this.stuckThresholds);
  }

  rejections(limit: number): Promise<Overview['recentRejections']> {
    return recentRejections(this.inbox.database, limit);
  }

  outboxRows(filter: OutboxFilter): Promise<OutboxEntry[]> {
    return this.outbox.list(filter);
  }

  outboxRow(id: number): Promise<OutboxEntry | null> {
    return this.outbox.find(id);
  }

  auditEntries(limit: number): Promise<AdminAction[]> {
    return this.audit.recent(limit);
  }

  reconcileRuns(limit: number, provider?: string, after?: KeysetPosition): Promise<ReconcileRun[]> {
    return new ReconcileRuns(this.inbox.database, this.inbox.clock).history(limit, provider, after);
  }
}
