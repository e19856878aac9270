import { sql, type ExpressionBuilder, type Kysely } from 'kysely';
import type { VerifiedEvent } from '../../model/delivery.js';
import type { InboxDatabase } from '../schema.js';
import type { RecordRequest } from './record-path.js';

/** The row a new event is stored as, whether it is recorded alone or in a batch. */
export function newEventRow({ event, paymentId, receivedAt }: RecordRequest) {
  return {
    provider: event.provider,
    event_id: event.eventId,
    event_type: event.eventType,
    status: 'received' as const,
    attempts: 0,
    next_attempt_at: receivedAt,
    created_at: receivedAt,
    payment_id: paymentId,
    source: event.source ?? 'delivery',
  };
}

export type NewEventRow = ReturnType<typeof newEventRow>;

// Every column of the row, once: the record keyed by them makes the compiler check none is missing.
const NEW_EVENT_COLUMN_SET: Record<keyof NewEventRow, true> = {
  provider: true,
  event_id: true,
  event_type: true,
  status: true,
  attempts: true,
  next_attempt_at: true,
  created_at: true,
  payment_id: true,
  source: true,
};
export const NEW_EVENT_COLUMNS = Object.keys(NEW_EVENT_COLUMN_SET) as Array<keyof NewEventRow>;

/**
 * A column of a new event's row in `newEventSource`. `attempts` is a literal 0, which every new row
 * has: PostgreSQL types a UNION's column of untyped parameters as text, which an integer column
 * refuses. Every other value is short (keys, a type, a time): MariaDB types a UNION's column from its
 * parameters, and cut a bound string of over 65,535 bytes to its length modulo 65,536, which is why
 * the payload goes into its body row by a VALUES list instead (returning.ts).
 */
function columnSource(eb: ExpressionBuilder<InboxDatabase, never>, column: keyof NewEventRow, value: <Column extends keyof NewEventRow>(column: Column) => NewEventRow[Column]) {
  return column === 'attempts' ? sql.lit(0).as(column) : eb.val(value(column)).as(column);
}

/**
 * One new event as a row to insert, unless its key was archived. The archive commits the key before
 * it deletes the row, so an insert racing it meets one or the other: the row (the unique key ignores
 * the insert) or the key (this condition drops it).
 */
export function newEventSource(db: Kysely<InboxDatabase>, value: <Column extends keyof NewEventRow>(column: Column) => NewEventRow[Column]) {
  return db
    .selectNoFrom((eb) => NEW_EVENT_COLUMNS.map((column) => columnSource(eb, column, value)))
    .where((eb) => eb.not(eb.exists(eb.selectFrom('archived_event_keys').select('id').where('provider', '=', value('provider')).where('event_id', '=', value('event_id')))));
}

/** What a new event's body row stores. */
export function bodyOf(event: VerifiedEvent): { payload: string; headers: string } {
  return { payload: event.payload, headers: JSON.stringify(event.headers) };
}

/** The body row of a new event, inserted by the transaction that inserts its row `id`. */
export function newBodyRow(id: number, event: VerifiedEvent): NewBodyRow {
  return { event_row_id: id, ...bodyOf(event) };
}

export interface NewBodyRow extends Record<string, unknown> {
  event_row_id: number;
  payload: string;
  headers: string;
}

/** A row an insert of new events answers (RETURNING), or a read of them finds. */
export interface InsertedRow {
  id: number;
  provider: string;
  event_id: string;
}
