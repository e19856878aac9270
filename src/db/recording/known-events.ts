import { sql, type ExpressionBuilder, type Kysely } from 'kysely';
import type { VerifiedEvent } from '../../model/delivery.js';
import { groupBy } from '../batcher.js';
import type { EventStatus, InboxDatabase } from '../schema.js';
import { eventKey, type BatchOutcome, type KnownRow, type RecordRequest } from './record-path.js';

/** Matches the batch's (provider, event_id) keys, a query per provider present, in one statement. */
export function whereKeys(events: VerifiedEvent[]) {
  const byProvider = groupBy(events, (event) => event.provider);
  return (eb: ExpressionBuilder<InboxDatabase, 'webhook_events' | 'archived_event_keys'>) =>
    eb.or(
      [...byProvider].map(([provider, group]) =>
        eb.and([
          eb('provider', '=', provider),
          eb(
            'event_id',
            'in',
            group.map((e) => e.eventId),
          ),
        ]),
      ),
    );
}

/** Events already known, in one statement: stored, or archived (their key stays behind, with the row id they had). */
export async function knownByKey(db: Kysely<InboxDatabase>, events: VerifiedEvent[]): Promise<Map<string, KnownRow>> {
  const rows = await db
    .selectFrom('webhook_events')
    .select(['id', 'provider', 'event_id', 'status'])
    .where(whereKeys(events))
    .unionAll(
      db
        .selectFrom('archived_event_keys')
        .select(['event_row_id as id', 'provider', 'event_id', sql.lit<EventStatus>('processed').as('status')])
        .where(whereKeys(events)),
    )
    .execute();
  const known = new Map<string, KnownRow>();
  // A stored row comes first; its archived key, if the archive is moving it right now, names the same id.
  for (const row of rows) if (!known.has(eventKey(row.provider, row.event_id))) known.set(eventKey(row.provider, row.event_id), { id: Number(row.id), status: row.status });
  return known;
}

/**
 * A batch's outcome from the rows it `created`: an event it did not insert was stored already (or by
 * a concurrent writer, whose commit the insert waited for) or archived, and one more read finds its
 * row.
 */
export async function outcomeOf(db: Kysely<InboxDatabase>, unique: RecordRequest[], created: Map<string, number>): Promise<BatchOutcome> {
  const others = unique.map((r) => r.event).filter((event) => !created.has(eventKey(event.provider, event.eventId)));
  return { created, existing: others.length === 0 ? new Map<string, KnownRow>() : await knownByKey(db, others) };
}
