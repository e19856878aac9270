import { sql, type RawBuilder } from 'kysely';
import type { ColumnTypes } from '../column-types.js';
import { procedureText } from './record-event-procedure-v1.js';

/**
 * MariaDB's procedure (10.6 and later) that records a batch of events in one call, in one
 * transaction: the rows of those whose key is neither stored nor archived, and their bodies,
 * committed only when every payload was stored whole. Its first parameter is a JSON array with one
 * array of fields per event (in the order the procedure lists them); its second, the events'
 * payloads and headers one after the other, as bytes. It answers one row per event, or a single row
 * whose outcome is `incomplete` when it rolled the batch back.
 */
export const RECORD_EVENTS_PROCEDURE = 'webhook_inbox_record_events';

/**
 * The procedure's first version, created by migration 0027. Shipped SQL (src/db/migrations/shipped.json
 * holds this file's hash): never edited. A change is a version of its own in a file of its own, which
 * a new migration creates.
 */
export function createRecordEventsProcedureV1(types: ColumnTypes): RawBuilder<unknown> {
  // Each event's fields, in the order of its JSON array (record-by-call.ts writes them so); `body_at` is
  // where its payload starts in the bytes, counted from 1 as SUBSTRING does, its headers follow.
  const fields = {
    provider: procedureText(types.shortText),
    event_id: procedureText(types.key),
    event_type: procedureText(types.key),
    received_at: types.timestamp,
    payment_id: procedureText(types.key),
    source: procedureText(types.shortText),
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
  return sql`create procedure ${sql.raw(RECORD_EVENTS_PROCEDURE)}(in p_events ${procedureText(types.longText)}, in p_bodies longblob)
          modifies sql data
          record_events: begin
            declare v_ids longtext default null;
            declare v_provider ${procedureText(types.shortText)} default null;
            declare v_event_id ${procedureText(types.key)} default null;
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
          end record_events`;
}
