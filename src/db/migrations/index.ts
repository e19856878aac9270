import type { Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';
import { webhookEvents } from './0001_webhook_events.js';
import { paymentsAndOutbox } from './0002_course_platform.js';
import { paymentLeases } from './0003_payment_leases.js';
import { operations } from './0004_operations.js';
import { outboxDispatch } from './0005_outbox_dispatch.js';
import { payuTransactionKeys } from './0006_payu_transaction_keys.js';
import { adminEventFilters } from './0007_admin_event_filters.js';
import { deliveryStats } from './0008_delivery_stats.js';
import { adminActions } from './0009_admin_actions.js';
import { eventSource } from './0010_event_source.js';
import { reconcileRuns } from './0011_reconcile_runs.js';
import { paymentMetadata } from './0013_payment_metadata.js';
import { outboxOrdering } from './0015_outbox_ordering.js';
import { copyProgress } from './0016_copy_progress.js';
import { eventAttempts } from './0017_event_attempts.js';
import { bulkReplays } from './0018_bulk_replays.js';
import { adminPageIndexes } from './0019_admin_page_indexes.js';
import { scheduledRuns } from './0020_scheduled_runs.js';
import { paymentLocks } from './0021_payment_locks.js';
import { oneStatusIndex } from './0022_one_status_index.js';
import { fewerEventIndexes } from './0023_fewer_event_indexes.js';
import { eventBodies } from './0024_event_bodies.js';
import { wholePayloadCheck } from './0025_whole_payload_check.js';
import { recordEventProcedure } from './0026_record_event_procedure.js';
import { recordEventsProcedure } from './0027_record_events_procedure.js';
import { eventProcessings } from './0028_event_processings.js';
import { adminSessions } from './0029_admin_sessions.js';
import { paymentListIndexes } from './0030_payment_list_indexes.js';
import { courseColumnsOut } from './0031_course_columns_out.js';
import { typedOutcomes } from './0032_typed_outcomes.js';

/**
 * The inbox's versioned migrations, one file each, applied in name order and recorded in
 * `schema_migrations`. A migration that has shipped is never edited (0002 explains the one
 * exception): a change is the next number, in a file of its own, listed here and in shipped.json,
 * whose test fails on an edited or unlisted file.
 */
export function inboxMigrations(types: ColumnTypes): Record<string, Migration> {
  return {
    '0001_webhook_events': webhookEvents(types),
    '0002_course_platform': paymentsAndOutbox(types),
    '0003_payment_leases': paymentLeases(types),
    '0004_operations': operations(types),
    '0005_outbox_dispatch': outboxDispatch(types),
    '0006_payu_transaction_keys': payuTransactionKeys(),
    '0007_admin_event_filters': adminEventFilters(),
    '0008_delivery_stats': deliveryStats(types),
    '0009_admin_actions': adminActions(types),
    '0010_event_source': eventSource(types),
    '0011_reconcile_runs': reconcileRuns(types),
    '0013_payment_metadata': paymentMetadata(types),
    '0015_outbox_ordering': outboxOrdering(types),
    '0016_copy_progress': copyProgress(types),
    '0017_event_attempts': eventAttempts(types),
    '0018_bulk_replays': bulkReplays(types),
    '0019_admin_page_indexes': adminPageIndexes(types),
    '0020_scheduled_runs': scheduledRuns(types),
    '0021_payment_locks': paymentLocks(),
    '0022_one_status_index': oneStatusIndex(types),
    '0023_fewer_event_indexes': fewerEventIndexes(types),
    '0024_event_bodies': eventBodies(types),
    '0025_whole_payload_check': wholePayloadCheck(types),
    '0026_record_event_procedure': recordEventProcedure(types),
    '0027_record_events_procedure': recordEventsProcedure(types),
    '0028_event_processings': eventProcessings(types),
    '0029_admin_sessions': adminSessions(types),
    '0030_payment_list_indexes': paymentListIndexes(types),
    '0031_course_columns_out': courseColumnsOut(types),
    '0032_typed_outcomes': typedOutcomes(types),
  };
}
