import type { IncomingHttpHeaders } from 'node:http';

/** Identifiers (event, payment, user ids) become VARCHAR(255) keys: longer ones are refused, never cut. */
export const MAX_KEY_LENGTH = 255;

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
}
