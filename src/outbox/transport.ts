import type { OutboxMessage } from './outbox-store.js';

export interface Delivered {
  /** `skipped`: deliberately not delivered (no transport configured, nobody to send to). */
  status: 'sent' | 'skipped';
  /** What the downstream answered, or why nothing was sent; kept on the row for operators. */
  outcome: string;
}

/**
 * Performs one kind of side effect. It sends the message's idempotency key with every attempt, so
 * the receiver can deduplicate a retry. Throwing fails the attempt: PermanentError means no retry,
 * RetryLaterError may name the delay, anything else retries with backoff.
 */
export interface OutboxTransport {
  deliver(message: OutboxMessage): Promise<Delivered>;
  /**
   * The longest one delivery may take before the transport gives up on it (its timeout). The
   * dispatcher's lease covers it, so that a delivery still allowed to run is never taken over.
   */
  readonly timeoutMs?: number;
  close?(): void;
}

/** Transports by outbox kind. */
export type OutboxTransports = Record<string, OutboxTransport>;

/** Stands in for a transport that is not configured: the row is marked skipped with the reason, not lost. */
export class NotConfigured implements OutboxTransport {
  constructor(readonly reason: string) {}

  get outcome(): string {
    return `skipped: ${this.reason}`;
  }

  async deliver(): Promise<Delivered> {
    return { status: 'skipped', outcome: this.outcome };
  }
}

/**
 * The kinds this process cannot deliver, each with the outcome its rows get: the processing
 * transaction writes them already skipped, so they cost no claim and no finish. Once the transport is
 * configured, `webhook-inbox outbox retry --status skipped` makes them due again.
 */
export function skippedOutboxKinds(transports: OutboxTransports): ReadonlyMap<string, string> {
  return new Map(Object.entries(transports).flatMap(([kind, transport]) => (transport instanceof NotConfigured ? [[kind, transport.outcome]] : [])));
}
