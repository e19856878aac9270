import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import type { StoreBackend } from '../db/backend.js';
import { Batcher } from '../db/batcher.js';
import { eventKey, recordBatch, type BatchInsert, type RecordPath, type RecordRequest, type RecordResult } from '../db/recording/record-path.js';
import { toDbTime, type InboxDatabase } from '../db/schema.js';
import { RecordNotStoredError } from '../errors.js';
import type { VerifiedEvent } from '../model/delivery.js';
import type { DatabaseErrors } from './database-errors.js';

/**
 * Recording deliveries: group commit (see Batcher), so concurrent deliveries are recorded together
 * and share a commit (and its log flush). How a database writes them is its backend's RecordPath
 * (db/<database>/). An acknowledgement is given only for a payload the database stored whole.
 */

/** Inserts of one event whose row the database dropped (RecordNotStoredError): each takes a new id. */
const RECORD_ATTEMPTS = 5;
/**
 * Events per group commit, the largest recordBatchShape; bounded so one statement stays far below
 * parameter and packet limits.
 */
export const MAX_RECORD_BATCH = 128;
const MAX_RECORD_BATCH_BYTES = 4 * 1024 * 1024;

/**
 * The sizes a record batch takes: any up to 8 events, then powers of two and halfway between them
 * (12, 16, 24, 32, 48, 64, 96, 128). Each size is one statement text, so a few shapes cover every
 * batch and all of them stay prepared on the server; a batch of a size in between leaves its last
 * events to the next one.
 */
export function recordBatchShape(size: number): number {
  if (size <= 8) return size;
  const power = 2 ** Math.floor(Math.log2(size));
  return size >= power * 1.5 ? power * 1.5 : power;
}

/**
 * The acknowledgement path's writer: deliveries are batched (one batch per connection of `ackDb` at a
 * time), a batch is recorded with one commit (see BatchInsert), and an event a batch could not
 * settle, or that comes alone, is recorded alone. `ackDb` serves this path alone, so a delivery's
 * insert never queues behind processing statements for a pooled connection.
 */
export class EventRecorder {
  private readonly batcher: Batcher<RecordRequest, RecordResult>;
  private readonly path: RecordPath;
  /** How this database records a batch, asked of it once (see RecordPath.batchInsert). */
  private batchInsert: Promise<BatchInsert> | undefined;

  /** @param recordBatches record batches running at once, one per connection of `ackDb`. */
  constructor(
    ackDb: Kysely<InboxDatabase>,
    recordBatches: number,
    private readonly backend: StoreBackend,
    private readonly errors: DatabaseErrors,
    private readonly clock: Clock,
  ) {
    this.batcher = new Batcher((requests) => this.recordMany(requests), {
      maxBatch: MAX_RECORD_BATCH,
      maxInFlight: recordBatches,
      weight: (request) => request.event.payload.length,
      maxWeight: MAX_RECORD_BATCH_BYTES,
      shape: recordBatchShape,
      // A provider's concurrent copies of one event wait for the first one's record: run beside it,
      // each would insert the same key and wait for the other's row lock, its whole batch with it.
      coalesce: { keyOf: (request) => eventKey(request.event.provider, request.event.eventId), copy: (first) => ({ ...first, outcome: 'duplicate' }) },
    });
    this.path = backend.recordPath(ackDb);
  }

  /** Resolves once the batch that carries the event has committed. */
  record(event: VerifiedEvent, paymentId: string | null): Promise<RecordResult> {
    return this.batcher.submit({ event, paymentId, receivedAt: toDbTime(this.clock.now()) });
  }

  private async recordMany(requests: RecordRequest[]): Promise<Array<PromiseSettledResult<RecordResult>>> {
    const alone = () => Promise.allSettled(requests.map((request) => this.recordOne(request)));
    if (requests.length === 1) return alone();
    try {
      const insert = await this.recordBatchInsert();
      if (requests.length < insert.minBatch) return await alone();
      const results = await this.errors.withConflictRetries(() => recordBatch(requests, insert));
      return await Promise.allSettled(results.map((result, i) => (result ? Promise.resolve(result) : this.recordOne(requests[i]!))));
    } catch (error) {
      // Unreachable: every waiting delivery gets the 503. Otherwise a concurrent insert of one of the
      // events (ConcurrentInsertError), a payload stored incomplete, or one row the database refuses,
      // each rolled back: each event alone, so only a bad one fails.
      if (this.backend.isUnavailable(error)) throw this.errors.translate(error);
      return alone();
    }
  }

  /** Asked of the server once; asked again after a failure (it may have been down). */
  private recordBatchInsert(): Promise<BatchInsert> {
    this.batchInsert ??= this.path.batchInsert().catch((error: unknown) => {
      this.batchInsert = undefined;
      throw error;
    });
    return this.batchInsert;
  }

  /**
   * One event, one transaction (or call). A row that was neither inserted nor found is inserted again
   * (see RecordNotStoredError); a batch leaves such an event to this.
   */
  private async recordOne(request: RecordRequest): Promise<RecordResult> {
    const { event } = request;
    for (let attempt = 1; ; attempt++) {
      const result = await this.errors.guard(() => this.path.recordOne(request));
      if (result) return result;
      if (attempt === RECORD_ATTEMPTS) {
        throw new RecordNotStoredError(`event ${event.provider}/${event.eventId} was neither inserted nor found after ${attempt} attempts`);
      }
    }
  }
}
