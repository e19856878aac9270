import type { IncomingHttpHeaders } from 'node:http';

/** Identifiers (event, payment, user ids) become VARCHAR(255) keys: longer ones are refused, never cut. */
export const MAX_KEY_LENGTH = 255;
/** Short texts (provider names, currencies, statuses) are VARCHAR(64). */
export const MAX_SHORT_TEXT_LENGTH = 64;

/**
 * A UTF-16 surrogate without its pair: a JavaScript string can hold one (JSON's "\ud800" escape),
 * but UTF-8 cannot, so the database drivers store U+FFFD instead and "X\ud800" and "X\udc00" would
 * become one key.
 */
const LONE_SURROGATE = /\p{Cs}/u;

/** Why `text` cannot be stored whole as a key (or a column of `maxLength` characters), or null. */
export function unstorableText(text: string, maxLength = MAX_KEY_LENGTH): string | null {
  if (text.length > maxLength) return `is longer than ${maxLength} characters`;
  if (LONE_SURROGATE.test(text)) return 'is not valid Unicode (it holds a lone UTF-16 surrogate)';
  // JSON's "\u0000" escape makes one; PostgreSQL's text refuses it, so no store keeps it.
  if (text.includes('\u0000')) return 'holds a NUL character (U+0000)';
  return null;
}

export const PROVIDER_NAMES = ['stripe', 'razorpay', 'payu'] as const;
export type ProviderName = (typeof PROVIDER_NAMES)[number];

export function isProviderName(value: string): value is ProviderName {
  return (PROVIDER_NAMES as readonly string[]).includes(value);
}

/** A delivery exactly as it reached us: the body is the raw bytes, never re-serialised. */
export interface RawDelivery {
  headers: IncomingHttpHeaders;
  body: Buffer;
  receivedAt: Date;
}

/** How an event came in: a provider's delivery, or reconciliation with the provider's API. */
export type EventSource = 'delivery' | 'reconcile';

/** An authenticated delivery, ready to be recorded under the provider's own event id. */
export interface VerifiedEvent {
  provider: ProviderName;
  eventId: string;
  eventType: string;
  /** JSON text to store: the raw body verbatim for JSON providers, normalised fields for form posts. */
  payload: string;
  /** The headers needed to verify the event again later (signature, event id, content type). */
  headers: Record<string, string>;
  /** The payload as the verifier read it, so receiving does not parse it again; absent when read back from the store. */
  parsedPayload?: Record<string, unknown>;
  /** Absent for a delivery; `reconcile` for an event read from the provider's API. */
  source?: EventSource;
}
