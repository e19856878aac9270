import { createHash } from 'node:crypto';
import type { Insertable } from 'kysely';
import type { DbTime, OutboxTable } from '../db/schema.js';
import { MAX_KEY_LENGTH } from '../model/delivery.js';
import { perBatch } from '../store/complete.js';
import type { BusinessTransaction, CompletionBatch } from '../store/inbox-store.js';

/** A side effect to deliver after the commit: what a handler hands to `writeOutbox`. */
export interface NewOutboxMessage {
  /** Which transport delivers it (`OutboxTransports` maps kinds to transports). */
  kind: string;
  /**
   * Stable per business effect: derived from the payment, never from the delivery or the attempt, so
   * that a second event or a second run of the handler adds nothing. The transport sends it with
   * every attempt, for the receiver to deduplicate.
   */
  key: string;
  /** Any JSON value; the transport receives it parsed. */
  payload: unknown;
  /** The key of a row that must be final (sent, skipped or failed) before this one is delivered. */
  after?: string;
  /**
   * Rows with the same ordering key (a payment's, say) are delivered one at a time, in the order they
   * were written: the next waits while the one before is pending, retried or being sent.
   */
  orderingKey?: string;
}

/**
 * Keys are stored in a 255-character column and compared whole: INSERT IGNORE would cut a longer one,
 * and two keys that share a prefix would share one row. A longer key is stored as the SHA-256 of the
 * whole key after a short prefix that keeps it readable (`<prefix>sha256:<hex>`): the same for the
 * same key, so it stays unique and stable.
 */
export function storableKey(key: string, readablePrefix = ''): string {
  return key.length <= MAX_KEY_LENGTH ? key : `${readablePrefix}sha256:${createHash('sha256').update(key).digest('hex')}`;
}

/** The outbox rows of one completion batch, inserted at its commit by one statement. */
const batchRows = perBatch<Array<Insertable<OutboxTable>>, unknown>(
  () => [],
  async (tx: BusinessTransaction, rows) => {
    // INSERT IGNORE: a row under a key that exists already is the same effect, written before.
    if (rows.length > 0) await tx.insertInto('outbox').orIgnore().values(rows).execute();
  },
);

/**
 * Adds an outbox row in the processing transaction: it commits with the event, or not at all, and
 * the dispatcher delivers it after the commit, at least once, under its key. Rows are written at the
 * batch's commit, one statement for every handler and event of the batch, in the order they were added.
 * A row of a kind in `skippedOutboxKinds` is written final, skipped, with that outcome: nothing would
 * deliver it, and an operator's retry makes it due again once something can.
 */
export function writeOutbox(context: { batch: CompletionBatch; now: DbTime; skippedOutboxKinds?: ReadonlyMap<string, string> }, message: NewOutboxMessage): void {
  const { batch, now } = context;
  const skippedOutcome = context.skippedOutboxKinds?.get(message.kind);
  batchRows(batch, null).push({
    idempotency_key: storableKey(message.key),
    kind: message.kind,
    payload: JSON.stringify(message.payload ?? null),
    ...(skippedOutcome === undefined ? { status: 'pending', next_attempt_at: now } : { status: 'skipped', next_attempt_at: null, outcome: skippedOutcome }),
    attempts: 0,
    created_at: now,
    depends_on_key: message.after === undefined ? null : storableKey(message.after),
    ordering_key: message.orderingKey === undefined ? null : storableKey(message.orderingKey),
  });
}
