import { sql } from 'kysely';

/**
 * PostgreSQL's function that fails the statement it runs in when a body's stored payload size is not
 * the size sent, with PAYLOAD_NOT_WHOLE_STATE and a JSON detail naming the event and the size stored
 * (record-in-one-statement.ts reads it).
 */
export const WHOLE_PAYLOAD_FUNCTION = 'webhook_inbox_whole_payload';
export const PAYLOAD_NOT_WHOLE_STATE = 'WI001';

/**
 * The function's first version, created by migration 0025. Shipped SQL (src/db/migrations/shipped.json
 * holds this file's hash): never edited. A change is a version of its own in a file of its own, which
 * a new migration creates.
 */
export const CREATE_WHOLE_PAYLOAD_FUNCTION_V1 = sql`create or replace function ${sql.raw(WHOLE_PAYLOAD_FUNCTION)}(stored integer, expected integer, provider text, event_id text) returns integer
          language plpgsql as $$
          begin
            if stored is distinct from expected then
              raise exception 'a payload was stored with another size' using errcode = ${sql.lit(PAYLOAD_NOT_WHOLE_STATE)},
                detail = json_build_object('provider', provider, 'event_id', event_id, 'stored', stored)::text;
            end if;
            return stored;
          end $$`;
