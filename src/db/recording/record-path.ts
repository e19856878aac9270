import type { VerifiedEvent } from '../../model/delivery.js';
import type { DbTime, EventStatus } from '../schema.js';

/** A delivery to record. */
export interface RecordRequest {
  event: VerifiedEvent;
  /** The payment the event is about (events of one payment are processed one at a time). */
  paymentId: string | null;
  receivedAt: DbTime;
}

/** The event's row, and whether this delivery recorded it or repeats an event stored (or archived) before. */
export interface RecordResult {
  outcome: 'recorded' | 'duplicate';
  id: number;
  status: EventStatus;
}

export const eventKey = (provider: string, eventId: string) => `${provider}\u0000${eventId}`;

/** An event's row already there: stored, or archived (its key stays behind, with the row id it had). */
export interface KnownRow {
  id: number;
  status: EventStatus;
}

/** The batch's own new rows (by eventKey), and the rows its other events already had. */
export interface BatchOutcome {
  created: Map<string, number>;
  existing: Map<string, KnownRow>;
}

/**
 * How a database records new events, supplied by its backend (StoreBackend.recordPath) over the
 * acknowledgement path's connections. The store groups deliveries into batches and answers each one
 * (store/record.ts); this writes them. An acknowledgement is given only for a payload the database
 * stored whole: a payload stored with another size is a RecordNotStoredError.
 */
export interface RecordPath {
  /**
   * One event, in a transaction (or a call) of its own. Null when the database neither inserted its
   * row nor holds one for its key (see RecordNotStoredError): the caller inserts it again.
   */
  recordOne(request: RecordRequest): Promise<RecordResult | null>;
  /** How this server records a batch: asked of it, so the caller keeps the answer, and asks again after a failure. */
  batchInsert(): Promise<BatchInsert>;
}

/** One way of inserting a batch of events with one commit. */
export interface BatchInsert {
  /**
   * `returning`: INSERT ... RETURNING of the events, then of their bodies, in a transaction.
   * `one statement`: both inserts in one statement, which commits by itself.
   * `call`: one call of a procedure that runs the transaction on the server.
   * `transaction`: without RETURNING, a transaction that reads which events exist before it inserts
   * the others.
   */
  readonly kind: 'returning' | 'one statement' | 'call' | 'transaction';
  /** Fewer events are recorded one by one: a batch of them would take more round trips than it saves. */
  readonly minBatch: number;
  /**
   * Inserts the events that are neither stored nor archived, and their bodies, with one commit, and
   * finds the rows of the others. `unique`: one request per event, sorted by key. A payload not
   * stored whole rolls the batch back with a RecordNotStoredError naming its event.
   */
  insert(unique: RecordRequest[]): Promise<BatchOutcome>;
}

/**
 * Records many events at once, with one commit (see BatchInsert). Within the batch, the first
 * request for an event records it; the others are its duplicates. An event whose row the database
 * neither inserted nor holds (see RecordNotStoredError) is answered null, for the caller to record
 * alone; the batch's other answers stand. A payload not stored whole rolls the batch back with a
 * RecordNotStoredError.
 */
export async function recordBatch(requests: RecordRequest[], insert: BatchInsert): Promise<Array<RecordResult | null>> {
  const firstByKey = new Map<string, RecordRequest>();
  for (const request of requests) {
    const key = eventKey(request.event.provider, request.event.eventId);
    if (!firstByKey.has(key)) firstByKey.set(key, request);
  }
  // Sorted, so concurrent batches lock index entries in the same order and cannot deadlock.
  const unique = [...firstByKey.values()].sort((a, b) => compare(a.event, b.event));
  const { created, existing } = await insert.insert(unique);

  return requests.map((request): RecordResult | null => {
    const key = eventKey(request.event.provider, request.event.eventId);
    const id = created.get(key);
    if (id !== undefined) return { outcome: firstByKey.get(key) === request ? 'recorded' : 'duplicate', id, status: 'received' };
    const row = existing.get(key);
    return row ? { outcome: 'duplicate', id: row.id, status: row.status } : null;
  });
}

function compare(a: VerifiedEvent, b: VerifiedEvent): number {
  if (a.provider !== b.provider) return a.provider < b.provider ? -1 : 1;
  return a.eventId < b.eventId ? -1 : a.eventId > b.eventId ? 1 : 0;
}

/** The record path of a database that records an event alone as a batch of one, the same way every time. */
export function recordPathOf(insert: BatchInsert): RecordPath {
  return {
    recordOne: async (request) => (await recordBatch([request], insert))[0]!,
    batchInsert: async () => insert,
  };
}
