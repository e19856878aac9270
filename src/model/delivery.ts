import { createHash } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

/** Identifiers (event, payment, user ids) become VARCHAR(255) keys: never cut (see storedKey for events). */
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

/** What storedKey puts before the digest of an id it cannot store as it is. */
export const DIGEST_KEY_PREFIX = 'sha256:';

/**
 * The key an event id (or type) a provider signed is stored under: the id itself when a key column
 * holds it whole and it prints as it is; otherwise (longer than the column, a lone surrogate, a
 * control character) `sha256:` and the hex digest of its JSON form, which tells every distinct
 * string apart (lone surrogates included) and is the same at every delivery and in reconcile. A
 * verified event is never refused for its id: a refusal only makes the provider retry it for days.
 * The payload keeps the id as sent.
 */
export function storedKey(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what it keeps out of keys
  if (unstorableText(text) === null && !/[\u0000-\u001f\u007f]/.test(text)) return text;
  return `${DIGEST_KEY_PREFIX}${createHash('sha256').update(JSON.stringify(text)).digest('hex')}`;
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
