import { sql, type Kysely, type Migration, type RawBuilder } from 'kysely';
import { createTable, type ColumnTypes, type Schema } from './column-types.js';
import { adminSessions } from './migrations/0029_admin_sessions.js';
import { recordsBatchesByProcedure } from './mysql/server-version.js';
import { rekeyPayuByTransaction } from './payu-transaction-keys.js';
import { eventProcessings } from './migrations/0028_event_processings.js';
import { paymentListIndexes } from './migrations/0030_payment_list_indexes.js';
import { typedOutcomes } from './migrations/0032_typed_outcomes.js';

/**
 * PostgreSQL's function (migration 0025) that fails the statement it runs in when a body's stored
 * payload size is not the size sent, with PAYLOAD_NOT_WHOLE_STATE and a JSON detail naming the event
 * and the size stored.
 */
export const WHOLE_PAYLOAD_FUNCTION = 'webhook_inbox_whole_payload';
export const PAYLOAD_NOT_WHOLE_STATE = 'WI001';

// Defined apart, so a migration in a file of its own (migrations/) can use them without an import cycle.
export { createTable, type ColumnTypes };

/**
 * MySQL's and MariaDB's procedure (migration 0026) that records one event in one call: its row unless
 * the key is stored or archived, and its body, in a transaction of its own that commits only a payload
 * stored whole. It answers one row, `id`, `outcome` and `status` (see RecordedByCall), or none when
 * the database neither inserted the row nor holds one for the key.
 */
export const RECORD_EVENT_PROCEDURE = 'webhook_inbox_record_event';

/**
 * MariaDB's procedure (migration 0027, MariaDB 10.6 and later) that records a batch of events in one
 * call, in one transaction: the rows of those whose key is neither stored nor archived, and their
 * bodies, committed only when every payload was stored whole. Its first parameter is a JSON array
 * with one array of fields per event (in the order the migration lists them); its second, the
 * events' payloads and headers one after the other, as bytes. It answers one row per event, or a
 * single row whose outcome is `incomplete` when it rolled the batch back.
 */
export const RECORD_EVENTS_PROCEDURE = 'webhook_inbox_record_events';

/** Events whose bodies one statement of migration 0024 copies. */
const BODY_COPY_BATCH = 2000;

/**
 * Migrations besides the inbox's own: those of the domains in use (named `<domain>/<migration>`), and
 * the names of those of the inbox's optional domains not in use, which an earlier run that used them
 * may have applied: such a record is kept, and nothing of it runs again.
 */
export interface DomainMigrations {
  active(types: ColumnTypes): Record<string, Migration>;
  dormant(types: ColumnTypes): string[];
}

export const NO_DOMAIN_MIGRATIONS: DomainMigrations = { active: () => ({}), dormant: () => [] };

/**
 * Versioned migrations, applied in name order and recorded in `schema_migrations`. Never edit one that
 * has shipped; add the next number instead (0002 explains the one exception).
 */
export function inboxMigrations(types: ColumnTypes): Record<string, Migration> {
  const table = (schema: Schema, name: string) => createTable(schema, types, name);

  return {
    '0001_webhook_events': {
      async up(db) {
        await table(db.schema, 'webhook_events')
          .addColumn('provider', types.shortText, (c) => c.notNull())
          .addColumn('event_id', types.key, (c) => c.notNull())
          .addColumn('event_type', types.key, (c) => c.notNull())
          .addColumn('payload', types.longText, (c) => c.notNull())
          .addColumn('headers', types.longText, (c) => c.notNull())
          .addColumn('status', types.shortText, (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('lease_owner', types.key)
          .addColumn('lease_token', types.shortText)
          .addColumn('lease_expires_at', types.timestamp)
          .addColumn('next_attempt_at', types.timestamp)
          .addColumn('last_error', types.longText)
          .addColumn('outcome', types.longText)
          .addColumn('created_at', types.timestamp, (c) => c.notNull())
          .addColumn('processed_at', types.timestamp)
          .addUniqueConstraint('uq_webhook_events_provider_event', ['provider', 'event_id'])
          .execute();
        await db.schema.createIndex('ix_webhook_events_due').on('webhook_events').column('next_attempt_at').execute();
        await db.schema.createIndex('ix_webhook_events_status').on('webhook_events').columns(['status', 'created_at']).execute();
      },
    },
    // The name is historical: this migration once created the course platform's orders and
    // enrollments too. They are the course platform's own now (course-platform/migrations.ts), created
    // only where it is used; an installation that ran the old 0002 keeps them, and the course
    // platform's migration finds them there. Every installation still has what this creates now.
    '0002_course_platform': {
      async up(db) {
        await table(db.schema, 'payments')
          .addColumn('provider', types.shortText, (c) => c.notNull())
          .addColumn('payment_id', types.key, (c) => c.notNull())
          .addColumn('status', types.shortText, (c) => c.notNull())
          .addColumn('amount', types.bigint)
          .addColumn('currency', types.shortText)
          .addColumn('user_id', types.key)
          .addColumn('course_id', types.key)
          .addColumn('email', types.key)
          .addColumn('created_at', types.timestamp, (c) => c.notNull())
          .addColumn('updated_at', types.timestamp, (c) => c.notNull())
          .addUniqueConstraint('uq_payments_provider_payment', ['provider', 'payment_id'])
          .execute();
        await table(db.schema, 'outbox')
          .addColumn('idempotency_key', types.key, (c) => c.notNull())
          .addColumn('kind', types.shortText, (c) => c.notNull())
          .addColumn('payload', types.longText, (c) => c.notNull())
          .addColumn('status', types.shortText, (c) => c.notNull())
          .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('next_attempt_at', types.timestamp)
          .addColumn('last_error', types.longText)
          .addColumn('created_at', types.timestamp, (c) => c.notNull())
          .addColumn('sent_at', types.timestamp)
          .addUniqueConstraint('uq_outbox_idempotency_key', ['idempotency_key'])
          .execute();
        await db.schema.createIndex('ix_outbox_due').on('outbox').columns(['status', 'next_attempt_at']).execute();
      },
    },
    '0003_payment_leases': {
      async up(db) {
        // Nullable and appended: instant on InnoDB, plain ADD COLUMN on SQLite. Older events stay NULL.
        await db.schema.alterTable('webhook_events').addColumn('payment_id', types.key).execute();
        await db.schema.createIndex('ix_webhook_events_payment').on('webhook_events').columns(['provider', 'payment_id']).execute();
        await table(db.schema, 'payment_leases')
          .addColumn('provider', types.shortText, (c) => c.notNull())
          .addColumn('payment_id', types.key, (c) => c.notNull())
          .addColumn('event_row_id', types.bigint)
          .addColumn('lease_token', types.shortText)
          .addColumn('lease_expires_at', types.timestamp)
          .addUniqueConstraint('uq_payment_leases_payment', ['provider', 'payment_id'])
          .execute();
      },
    },
    '0004_operations': {
      async up(db) {
        await table(db.schema, 'event_replays')
          .addColumn('event_row_id', types.bigint, (c) => c.notNull())
          .addColumn('provider', types.shortText, (c) => c.notNull())
          .addColumn('event_id', types.key, (c) => c.notNull())
          .addColumn('actor', types.key, (c) => c.notNull())
          .addColumn('reason', types.longText, (c) => c.notNull())
          .addColumn('previous_status', types.shortText, (c) => c.notNull())
          .addColumn('previous_attempts', 'integer', (c) => c.notNull())
          .addColumn('previous_error', types.longText)
          .addColumn('result', types.longText)
          .addColumn('requested_at', types.timestamp, (c) => c.notNull())
          .addColumn('finished_at', types.timestamp)
          .execute();
        await db.schema.createIndex('ix_event_replays_event').on('event_replays').column('event_row_id').execute();
        await table(db.schema, 'archived_event_keys')
          .addColumn('provider', types.shortText, (c) => c.notNull())
          .addColumn('event_id', types.key, (c) => c.notNull())
          .addColumn('event_row_id', types.bigint, (c) => c.notNull())
          .addColumn('event_created_at', types.timestamp, (c) => c.notNull())
          .addColumn('archive_file', types.key, (c) => c.notNull())
          .addColumn('archived_at', types.timestamp, (c) => c.notNull())
          .addUniqueConstraint('uq_archived_event_keys_provider_event', ['provider', 'event_id'])
          .execute();
      },
    },
    '0005_outbox_dispatch': {
      async up(db) {
        // One column per statement: SQLite's ALTER TABLE adds a single column at a time.
        const columns: Array<[string, RawBuilder<unknown>]> = [
          ['lease_owner', types.key],
          ['lease_token', types.shortText],
          ['lease_expires_at', types.timestamp],
          ['depends_on_key', types.key],
          ['outcome', types.longText],
        ];
        for (const [name, type] of columns) await db.schema.alterTable('outbox').addColumn(name, type).execute();
      },
    },
    '0006_payu_transaction_keys': { up: rekeyPayuByTransaction },
    '0007_admin_event_filters': {
      async up(db) {
        // The admin event list pages newest first through (created_at, id) under each filter: one
        // index per filter, ending in the keyset, so a page reads its rows and no more.
        const indexes: Array<[string, string[]]> = [
          ['ix_webhook_events_created', ['created_at', 'id']],
          ['ix_webhook_events_provider_created', ['provider', 'created_at', 'id']],
          ['ix_webhook_events_status_created', ['status', 'created_at', 'id']],
          ['ix_webhook_events_type_created', ['event_type', 'created_at', 'id']],
          ['ix_webhook_events_payment_id', ['payment_id']],
          ['ix_webhook_events_event_id', ['event_id']],
          ['ix_outbox_status_id', ['status', 'id']],
        ];
        for (const [name, columns] of indexes)
          await db.schema
            .createIndex(name)
            .on(name.startsWith('ix_outbox') ? 'outbox' : 'webhook_events')
            .columns(columns)
            .execute();
      },
    },
    '0008_delivery_stats': {
      async up(db) {
        // One row per minute, provider and result, added to by every process: the overview sums them.
        await table(db.schema, 'delivery_stats')
          .addColumn('minute', types.timestamp, (c) => c.notNull())
          .addColumn('provider', types.shortText, (c) => c.notNull())
          .addColumn('result', types.shortText, (c) => c.notNull())
          .addColumn('deliveries', types.bigint, (c) => c.notNull().defaultTo(0))
          .addColumn('ack_ms_total', types.bigint, (c) => c.notNull().defaultTo(0))
          .addColumn('ack_ms_max', types.bigint, (c) => c.notNull().defaultTo(0))
          .addUniqueConstraint('uq_delivery_stats_minute', ['minute', 'provider', 'result'])
          .execute();
        // A ring of slots, overwritten in turn: a flood of forged deliveries cannot grow it.
        await table(db.schema, 'rejected_deliveries')
          .addColumn('slot', 'integer', (c) => c.notNull())
          .addColumn('rejected_at', types.timestamp, (c) => c.notNull())
          .addColumn('provider', types.shortText, (c) => c.notNull())
          .addColumn('status_code', 'integer', (c) => c.notNull())
          .addColumn('reason', types.longText, (c) => c.notNull())
          .addColumn('remote_address', types.shortText)
          .addColumn('body_bytes', types.bigint)
          .addUniqueConstraint('uq_rejected_deliveries_slot', ['slot'])
          .execute();
        await db.schema.createIndex('ix_rejected_deliveries_at').on('rejected_deliveries').column('rejected_at').execute();
        // One sample a minute of what needs attention, by whichever process writes it first.
        await table(db.schema, 'pipeline_samples')
          .addColumn('minute', types.timestamp, (c) => c.notNull())
          .addColumn('due', types.bigint, (c) => c.notNull())
          .addColumn('oldest_pending_seconds', types.bigint)
          .addColumn('failed', types.bigint, (c) => c.notNull())
          .addColumn('stuck', types.bigint, (c) => c.notNull())
          .addColumn('outbox_failed', types.bigint, (c) => c.notNull())
          .addUniqueConstraint('uq_pipeline_samples_minute', ['minute'])
          .execute();
      },
    },
    '0009_admin_actions': {
      async up(db) {
        await table(db.schema, 'admin_actions')
          .addColumn('actor', types.key, (c) => c.notNull())
          .addColumn('role', types.shortText, (c) => c.notNull())
          .addColumn('action', types.shortText, (c) => c.notNull())
          .addColumn('target', types.key, (c) => c.notNull())
          .addColumn('reason', types.longText)
          .addColumn('result', types.longText)
          .addColumn('at', types.timestamp, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('ix_admin_actions_at').on('admin_actions').column('at').execute();
      },
    },
    '0010_event_source': {
      async up(db) {
        // Written by the insert that records the event, never after: a reconciled event is one from the start.
        await db.schema
          .alterTable('webhook_events')
          .addColumn('source', types.shortText, (c) => c.notNull().defaultTo('delivery'))
          .execute();
      },
    },
    '0011_reconcile_runs': {
      async up(db) {
        await table(db.schema, 'reconcile_runs')
          .addColumn('run_key', types.key, (c) => c.notNull())
          .addColumn('provider', types.shortText, (c) => c.notNull())
          .addColumn('window_start', types.timestamp, (c) => c.notNull())
          .addColumn('window_end', types.timestamp, (c) => c.notNull())
          .addColumn('dry_run', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('status', types.shortText, (c) => c.notNull())
          .addColumn('found', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('recorded', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('errors', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('cursor', types.longText)
          .addColumn('last_error', types.longText)
          .addColumn('started_at', types.timestamp, (c) => c.notNull())
          .addColumn('finished_at', types.timestamp)
          .addUniqueConstraint('uq_reconcile_runs_run_key', ['run_key'])
          .execute();
        await db.schema.createIndex('ix_reconcile_runs_provider').on('reconcile_runs').columns(['provider', 'status']).execute();
        await table(db.schema, 'operation_locks')
          .addColumn('name', types.key, (c) => c.notNull())
          .addColumn('owner', types.key, (c) => c.notNull())
          .addColumn('expires_at', types.timestamp, (c) => c.notNull())
          .addUniqueConstraint('uq_operation_locks_name', ['name'])
          .execute();
      },
    },
    '0013_payment_metadata': {
      async up(db) {
        await db.schema.alterTable('payments').addColumn('metadata', types.longText).execute();
      },
    },
    '0015_outbox_ordering': {
      async up(db) {
        await db.schema.alterTable('outbox').addColumn('ordering_key', types.key).execute();
        // The dispatcher asks, for each due row with a key, whether an earlier row of its key is unfinished.
        await db.schema.createIndex('ix_outbox_ordering').on('outbox').columns(['ordering_key', 'id']).execute();
      },
    },
    // `webhook-inbox copy` keeps here, in the target, how far it has copied each table from a source:
    // written in the transaction of each batch, so a copy cut short resumes where it stopped.
    '0016_copy_progress': {
      async up(db) {
        await table(db.schema, 'copy_progress')
          .addColumn('source', types.shortText, (c) => c.notNull())
          .addColumn('table_name', types.shortText, (c) => c.notNull())
          .addColumn('last_id', types.bigint, (c) => c.notNull())
          .addColumn('copied', types.bigint, (c) => c.notNull())
          .addColumn('updated_at', types.timestamp, (c) => c.notNull())
          .addUniqueConstraint('uq_copy_progress_source_table', ['source', 'table_name'])
          .execute();
      },
    },
    // Attempts that did not succeed, one row each, written only where a failure or a lost lease is
    // written anyway; the attempt that succeeds is read from the event row (claimed_at, processed_at),
    // so processing an event costs no more statements than before.
    '0017_event_attempts': {
      async up(db) {
        // Set by the claim's own UPDATE: when the current (or last) attempt started.
        await db.schema.alterTable('webhook_events').addColumn('claimed_at', types.timestamp).execute();
        await table(db.schema, 'event_attempts')
          .addColumn('event_row_id', types.bigint, (c) => c.notNull())
          .addColumn('attempt', 'integer', (c) => c.notNull())
          .addColumn('owner', types.key)
          .addColumn('outcome', types.shortText, (c) => c.notNull())
          .addColumn('error', types.longText)
          .addColumn('started_at', types.timestamp)
          .addColumn('ended_at', types.timestamp, (c) => c.notNull())
          .execute();
        await db.schema.createIndex('ix_event_attempts_event').on('event_attempts').columns(['event_row_id', 'id']).execute();
      },
    },
    // Bulk replays run in one serve process and are read and cancelled from any: their progress, the
    // cancel request and the runner's heartbeat live here, not in a process's memory.
    '0018_bulk_replays': {
      async up(db) {
        await table(db.schema, 'bulk_replays')
          .addColumn('job_key', types.key, (c) => c.notNull())
          .addColumn('actor', types.key, (c) => c.notNull())
          .addColumn('reason', types.longText, (c) => c.notNull())
          .addColumn('filter', types.longText, (c) => c.notNull())
          .addColumn('total', 'integer', (c) => c.notNull())
          .addColumn('done', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('processed', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('failed', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('skipped', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('state', types.shortText, (c) => c.notNull())
          .addColumn('error', types.longText)
          .addColumn('cancel_requested', 'integer', (c) => c.notNull().defaultTo(0))
          .addColumn('runner', types.key, (c) => c.notNull())
          .addColumn('heartbeat_at', types.timestamp, (c) => c.notNull())
          .addColumn('started_at', types.timestamp, (c) => c.notNull())
          .addColumn('finished_at', types.timestamp)
          .addUniqueConstraint('uq_bulk_replays_job_key', ['job_key'])
          .execute();
        await db.schema.createIndex('ix_bulk_replays_started').on('bulk_replays').columns(['started_at', 'id']).execute();
      },
    },
    '0019_admin_page_indexes': {
      async up(db) {
        // The dashboard pages through runs newest first by (started_at, id), of all providers or one.
        await db.schema.createIndex('ix_reconcile_runs_started').on('reconcile_runs').columns(['started_at', 'id']).execute();
        await db.schema.createIndex('ix_reconcile_runs_provider_started').on('reconcile_runs').columns(['provider', 'started_at', 'id']).execute();
        // PostgreSQL prices an index scan by its first column's correlation with the table order, cut
        // for an index of several columns: on (created_at, id) a time window's range looked dearer than
        // reading the whole table, and a text search in a 24-hour window read all of it. On
        // (created_at) alone the range is priced as the ordered read it is; rows of one time are put
        // in id order by an incremental sort of those few rows. MariaDB and SQLite keep (created_at,
        // id): their secondary indexes end in the primary key anyway, so they lose nothing.
        if (types.dialect === 'postgres') {
          await db.schema.createIndex('ix_webhook_events_created_at').on('webhook_events').column('created_at').execute();
          await db.schema.dropIndex('ix_webhook_events_created').execute();
        }
      },
    },
    // Jobs every serve process schedules (stuck check, provider alerts) run once per tick across them
    // all: the process that moves `last_tick` forward runs it. Alerts that fire are kept here too, so
    // an alert is posted once while it fires, whichever process checks.
    '0020_scheduled_runs': {
      async up(db) {
        await table(db.schema, 'scheduled_runs')
          .addColumn('job', types.key, (c) => c.notNull())
          .addColumn('last_tick', types.timestamp, (c) => c.notNull())
          .addColumn('owner', types.key, (c) => c.notNull())
          .addUniqueConstraint('uq_scheduled_runs_job', ['job'])
          .execute();
        await table(db.schema, 'firing_alerts')
          .addColumn('alert_key', types.key, (c) => c.notNull())
          .addColumn('since', types.timestamp, (c) => c.notNull())
          .addUniqueConstraint('uq_firing_alerts_alert_key', ['alert_key'])
          .execute();
      },
    },
    // A payment is held by a row lock of the transaction that applies one of its events (see
    // store/payment-locks.ts), which the database frees with the transaction; nothing is written to
    // hold or free it any more. A process of an earlier version can no longer complete an event once
    // this has run: its completion rolls back, and the event is retried by a current one.
    '0021_payment_locks': {
      async up(db) {
        for (const column of ['event_row_id', 'lease_token', 'lease_expires_at']) await db.schema.alterTable('payment_leases').dropColumn(column).execute();
      },
    },
    // Every write that moves an event's status updates each index holding `status`: (status,
    // created_at) of 0001 is a prefix of 0007's (status, created_at, id), which serves every query it
    // did, so it was kept up for nothing (on PostgreSQL, where any update of an indexed column writes
    // every index of the row, one index entry fewer per row version).
    '0022_one_status_index': {
      async up(db) {
        await dropEventIndex(db, 'ix_webhook_events_status');
      },
    },
    // Two more indexes that others serve, for the same reason. (payment_id) finds a payment's events
    // with or without its provider, a handful of rows to filter; (provider, event_id), unique, finds
    // an event id under every provider by naming them all (PROVIDER_NAMES), as (event_id) did.
    '0023_fewer_event_indexes': {
      async up(db) {
        for (const name of ['ix_webhook_events_payment', 'ix_webhook_events_event_id']) await dropEventIndex(db, name);
      },
    },
    // An event's payload and headers move to a row of their own, written with the event and never
    // updated: InnoDB rewrites a whole record whose size an update changes, so every claim and
    // completion of a row that held them wrote the payload to the redo log again (bench/HISTORY.md, "Event bodies in their own rows").
    '0024_event_bodies': {
      async up(db) {
        await db.schema
          .createTable('webhook_event_bodies')
          .ifNotExists()
          .addColumn('event_row_id', types.id, (c) => c.primaryKey().notNull())
          .addColumn('payload', types.longText, (c) => c.notNull())
          .addColumn('headers', types.longText, (c) => c.notNull())
          .$call((builder) => (types.tableOptions ? builder.modifyEnd(types.tableOptions) : builder))
          .execute();
        await moveEventBodies(db);
      },
    },
    // PostgreSQL records a batch's events and bodies in one statement, which commits by itself: the
    // size of each stored payload is compared inside it, by this function, whose error fails the
    // statement whole (record.ts). Other stores compare in the record's transaction.
    '0025_whole_payload_check': {
      async up(db) {
        if (types.dialect !== 'postgres') return;
        await sql`create or replace function ${sql.raw(WHOLE_PAYLOAD_FUNCTION)}(stored integer, expected integer, provider text, event_id text) returns integer
          language plpgsql as $$
          begin
            if stored is distinct from expected then
              raise exception 'a payload was stored with another size' using errcode = ${sql.lit(PAYLOAD_NOT_WHOLE_STATE)},
                detail = json_build_object('provider', provider, 'event_id', event_id, 'stored', stored)::text;
            end if;
            return stored;
          end $$`.execute(db);
      },
    },
    // MySQL and MariaDB record an event that comes alone with one round trip instead of four (BEGIN,
    // two inserts, COMMIT): the procedure runs the same transaction on the server (record.ts). Its
    // string parameters carry the tables' own character set and collation, so that what it compares
    // and stores is what the columns would have been given.
    '0026_record_event_procedure': {
      async up(db) {
        if (types.dialect !== 'mysql') return;
        const text = (type: RawBuilder<unknown>) => sql`${type} character set utf8mb4 collate utf8mb4_bin`;
        await sql`drop procedure if exists ${sql.raw(RECORD_EVENT_PROCEDURE)}`.execute(db);
        await sql`create procedure ${sql.raw(RECORD_EVENT_PROCEDURE)}(
            in p_provider ${text(types.shortText)}, in p_event_id ${text(types.key)}, in p_event_type ${text(types.key)},
            in p_received_at ${types.timestamp}, in p_payment_id ${text(types.key)}, in p_source ${text(types.shortText)},
            in p_payload ${text(types.longText)}, in p_headers ${text(types.longText)}, in p_payload_bytes ${types.bigint})
          modifies sql data
          record_event: begin
            declare v_id bigint unsigned default null;
            declare v_stored bigint default null;
            declare exit handler for sqlexception begin rollback; resignal; end;
            start transaction;
            -- The archive commits an event's key before it deletes the row: an insert racing it meets one or the other.
            insert ignore into webhook_events (provider, event_id, event_type, status, attempts, next_attempt_at, created_at, payment_id, source)
              select p_provider, p_event_id, p_event_type, 'received', 0, p_received_at, p_received_at, p_payment_id, p_source from dual
              where not exists (select 1 from archived_event_keys where provider = p_provider and event_id = p_event_id);
            if row_count() = 1 then
              set v_id = last_insert_id();
              insert into webhook_event_bodies (event_row_id, payload, headers) values (v_id, p_payload, p_headers);
              select octet_length(payload) into v_stored from webhook_event_bodies where event_row_id = v_id;
              if v_stored is null or v_stored <> p_payload_bytes then
                rollback;
                select v_id as id, 'incomplete' as outcome, 'received' as status, coalesce(v_stored, 0) as stored_bytes;
                leave record_event;
              end if;
              commit;
              select v_id as id, 'recorded' as outcome, 'received' as status, v_stored as stored_bytes;
              leave record_event;
            end if;
            commit;
            -- Read after the commit, so that the read sees the row that made the insert a duplicate.
            -- A stored row comes first; its archived key, if the archive is moving it right now, names the same id.
            select id, 'duplicate' as outcome, status, null as stored_bytes, 0 as archived from webhook_events where provider = p_provider and event_id = p_event_id
            union all
            select event_row_id, 'duplicate', 'processed', null, 1 from archived_event_keys where provider = p_provider and event_id = p_event_id
            order by archived limit 1;
          end record_event`.execute(db);
      },
    },
    // A record batch in one round trip instead of four (record.ts). The events' keys travel as JSON,
    // read with JSON_TABLE; their payloads and headers as one string of bytes, cut by each event's
    // offsets, so no payload is escaped into JSON on the way. The rows this transaction inserted are
    // the batch's rows without a body: every other writer inserts a row and its body in one
    // transaction, and the rows of one not yet committed are not read here. Only MariaDB 10.6 and
    // later get it (recordsBatchesByProcedure); elsewhere batches stay transactions.
    '0027_record_events_procedure': {
      async up(db) {
        if (types.dialect !== 'mysql') return;
        const { rows } = await sql<{ version: string }>`select version() as version`.execute(db);
        await sql`drop procedure if exists ${sql.raw(RECORD_EVENTS_PROCEDURE)}`.execute(db);
        if (!recordsBatchesByProcedure(rows[0]?.version ?? '')) return;
        const text = (type: RawBuilder<unknown>) => sql`${type} character set utf8mb4 collate utf8mb4_bin`;
        // Each event's fields, in the order of its JSON array (record.ts writes them so); `body_at` is
        // where its payload starts in the bytes, counted from 1 as SUBSTRING does, its headers follow.
        const fields = {
          provider: text(types.shortText),
          event_id: text(types.key),
          event_type: text(types.key),
          received_at: types.timestamp,
          payment_id: text(types.key),
          source: text(types.shortText),
          body_at: types.bigint,
          payload_bytes: types.bigint,
          headers_bytes: types.bigint,
        };
        const position = Object.keys(fields);
        /** The batch's events as a table `j` of the named fields. */
        const events = (...names: Array<keyof typeof fields>) =>
          sql`json_table(p_events, '$[*]' columns (${sql.join(names.map((name) => sql`${sql.raw(name)} ${fields[name]} path ${sql.lit(`$[${position.indexOf(name)}]`)}`))})) j`;
        // The batch's events first, each row found by its key: a table still small when its statistics
        // were last read would otherwise be scanned whole for every statement, long after it grew. For
        // the same reason every "not there" is an outer join on a key, never NOT EXISTS, which MariaDB
        // turns into a semi-join that reads the whole other table.
        const ownRow = sql`straight_join webhook_events e on e.provider = j.provider and e.event_id = j.event_id`;
        await sql`create procedure ${sql.raw(RECORD_EVENTS_PROCEDURE)}(in p_events ${text(types.longText)}, in p_bodies longblob)
          modifies sql data
          record_events: begin
            declare v_ids longtext default null;
            declare v_provider ${text(types.shortText)} default null;
            declare v_event_id ${text(types.key)} default null;
            declare v_stored bigint default null;
            declare exit handler for sqlexception begin rollback; resignal; end;
            -- The list of the batch's own row ids must not be cut (MariaDB's default is 1 MiB, a server may set less).
            if @@session.group_concat_max_len < 1048576 then
              set session group_concat_max_len = 1048576;
            end if;
            start transaction;
            -- The archive commits an event's key before it deletes the row: an insert racing it meets one or the other.
            insert ignore into webhook_events (provider, event_id, event_type, status, attempts, next_attempt_at, created_at, payment_id, source)
              select j.provider, j.event_id, j.event_type, 'received', 0, j.received_at, j.received_at, j.payment_id, j.source
              from ${events('provider', 'event_id', 'event_type', 'received_at', 'payment_id', 'source')}
              left join archived_event_keys a on a.provider = j.provider and a.event_id = j.event_id
              where a.id is null;
            if row_count() > 0 then
              select group_concat(e.id) into v_ids from ${events('provider', 'event_id')} ${ownRow}
                left join webhook_event_bodies b on b.event_row_id = e.id
                where b.event_row_id is null;
              insert into webhook_event_bodies (event_row_id, payload, headers)
                select e.id, convert(substring(p_bodies, j.body_at, j.payload_bytes) using utf8mb4),
                  convert(substring(p_bodies, j.body_at + j.payload_bytes, j.headers_bytes) using utf8mb4)
                from ${events('provider', 'event_id', 'body_at', 'payload_bytes', 'headers_bytes')} ${ownRow}
                where find_in_set(e.id, v_ids);
              select j.provider, j.event_id, coalesce(octet_length(b.payload), 0) into v_provider, v_event_id, v_stored
                from ${events('provider', 'event_id', 'payload_bytes')} ${ownRow}
                left join webhook_event_bodies b on b.event_row_id = e.id
                where find_in_set(e.id, v_ids) and coalesce(octet_length(b.payload), -1) <> j.payload_bytes
                limit 1;
              if v_event_id is not null then
                rollback;
                select v_provider as provider, v_event_id as event_id, null as id, 'incomplete' as outcome, 'received' as status, v_stored as stored_bytes;
                leave record_events;
              end if;
            end if;
            commit;
            -- Read after the commit, so that the read sees the rows that made inserts duplicates. A stored
            -- row comes first; its archived key, if the archive is moving it right now, names the same id.
            select j.provider, j.event_id, coalesce(e.id, a.event_row_id) as id,
                if(find_in_set(e.id, v_ids), 'recorded', 'duplicate') as outcome, coalesce(e.status, 'processed') as status, null as stored_bytes
              from ${events('provider', 'event_id')}
              left join webhook_events e on e.provider = j.provider and e.event_id = j.event_id
              left join archived_event_keys a on e.id is null and a.provider = j.provider and a.event_id = j.event_id;
          end record_events`.execute(db);
      },
    },
    '0028_event_processings': eventProcessings(types),
    '0029_admin_sessions': adminSessions(types),
    '0030_payment_list_indexes': paymentListIndexes(types),
    '0032_typed_outcomes': typedOutcomes(types),
  };

  /**
   * Copies every event's payload and headers to its body row, then drops them from webhook_events.
   * MySQL has no transactional DDL, so the migration may have stopped part way: rows already copied
   * are skipped, and the copy goes in batches, each its own short transaction. The last pass and the
   * drop hold both tables (a LOCK TABLES on MySQL, the migration's transaction elsewhere), so an event
   * that a process of the previous version records meanwhile is not lost with the columns.
   */
  async function moveEventBodies(db: Kysely<unknown>): Promise<void> {
    const copyAfter = async (after: number): Promise<number | null> => {
      const last = await sql<{
        id: number | string | null;
      }>`select max(id) as id from (select id from webhook_events where id > ${after} order by id limit ${sql.lit(BODY_COPY_BATCH)}) batch`.execute(db);
      const upTo = last.rows[0]?.id;
      if (upTo === null || upTo === undefined) return null;
      await sql`insert into webhook_event_bodies (event_row_id, payload, headers) select id, payload, headers from webhook_events where id > ${after} and id <= ${Number(upTo)}`.execute(
        db,
      );
      return Number(upTo);
    };
    // Batches are copied in id order and each commits whole, so every event up to the highest body
    // copied has its body: a migration that stopped part way goes on from there.
    const copyAll = async (): Promise<void> => {
      const copied = await sql<{ id: number | string | null }>`select max(event_row_id) as id from webhook_event_bodies`.execute(db);
      for (let after: number | null = Number(copied.rows[0]?.id ?? 0); after !== null;) after = await copyAfter(after);
    };
    const drop = async (): Promise<void> => {
      // One column per statement: SQLite drops a single column at a time.
      for (const column of ['payload', 'headers']) await db.schema.alterTable('webhook_events').dropColumn(column).execute();
    };
    if (types.dialect !== 'mysql') {
      // One transaction already (transactional DDL): the lock keeps writers out between the copy and the drop.
      if (types.dialect === 'postgres') await sql`lock table webhook_events in share row exclusive mode`.execute(db);
      await copyAll();
      await drop();
      return;
    }
    await copyAll();
    await sql`lock tables webhook_events write, webhook_event_bodies write`.execute(db);
    try {
      await copyAll();
      await drop();
    } finally {
      await sql`unlock tables`.execute(db);
    }
  }

  async function dropEventIndex(db: Kysely<unknown>, name: string): Promise<void> {
    const drop = db.schema.dropIndex(name);
    // MySQL names an index within its table; PostgreSQL and SQLite within the schema.
    await (types.dialect === 'mysql' ? drop.on('webhook_events') : drop).execute();
  }
}
