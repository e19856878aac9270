import { sql, type RawBuilder } from 'kysely';
import type { ColumnTypes } from '../column-types.js';

/**
 * MySQL's and MariaDB's procedure that records one event in one call: its row unless the key is
 * stored or archived, and its body, in a transaction of its own that commits only a payload stored
 * whole. It answers one row, `id`, `outcome` and `status` (see record-by-call.ts), or none when the
 * database neither inserted the row nor holds one for the key.
 */
export const RECORD_EVENT_PROCEDURE = 'webhook_inbox_record_event';

/**
 * A procedure's string parameter of `type`, with the tables' own character set and collation, so that
 * what the procedure compares and stores is what the columns would have been given.
 */
export function procedureText(type: RawBuilder<unknown>): RawBuilder<unknown> {
  return sql`${type} character set utf8mb4 collate utf8mb4_bin`;
}

/**
 * The procedure's first version, created by migration 0026. Shipped SQL (src/db/migrations/shipped.json
 * holds this file's hash): never edited. A change is a version of its own in a file of its own, which
 * a new migration creates.
 */
export function createRecordEventProcedureV1(types: ColumnTypes): RawBuilder<unknown> {
  return sql`create procedure ${sql.raw(RECORD_EVENT_PROCEDURE)}(
            in p_provider ${procedureText(types.shortText)}, in p_event_id ${procedureText(types.key)}, in p_event_type ${procedureText(types.key)},
            in p_received_at ${types.timestamp}, in p_payment_id ${procedureText(types.key)}, in p_source ${procedureText(types.shortText)},
            in p_payload ${procedureText(types.longText)}, in p_headers ${procedureText(types.longText)}, in p_payload_bytes ${types.bigint})
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
          end record_event`;
}
