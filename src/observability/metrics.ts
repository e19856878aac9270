import type { PaymentState } from '../model/payment-event.js';
import { BadRequestError, InboxError, SignatureError, UnknownProviderError, UnsupportedMediaTypeError } from '../errors.js';

/** How a delivery was answered, as the provider saw it. */
export type DeliveryResult = 'accepted' | 'duplicate' | 'invalid_signature' | 'bad_request' | 'unavailable' | 'error';

/** How one processing attempt ended: `retry_scheduled` will run again, `failed` needs an operator. */
export type AttemptResult = 'processed' | 'retry_scheduled' | 'failed' | 'lease_lost';

/** How a token was presented to /admin: the sign-in form, or an API request's bearer header. */
export type AdminSignInVia = 'form' | 'bearer';

/** Why /admin refused a token: not one of ADMIN_TOKENS, or its client has too many refusals already. */
export type AdminSignInRefusal = 'unknown_token' | 'rate_limited';

/**
 * The metrics port: what the pipeline reports as it runs. The inbox and the processor call it; the
 * Prometheus adapter (or an embedding service's own) decides how to count. Every call is on a hot
 * path and must not do I/O.
 */
export interface InboxMetrics {
  deliveryAnswered(provider: string, result: DeliveryResult, seconds: number): void;
  /** A worker claimed an event whose previous lease had expired (its holder died or stalled). */
  leaseTakenOver(provider: string): void;
  attemptFinished(attempt: { provider: string; result: AttemptResult; attempt: number; seconds: number }): void;
  /**
   * An event's processing committed; `latencySeconds` runs from its receipt. `staleState`: the event
   * changed nothing, its payment was already in that later state.
   */
  eventProcessed(event: { provider: string; staleState?: PaymentState; latencySeconds: number }): void;
  /**
   * The workers held back for `seconds` so that acknowledgements got the cores (`serve`'s workers'
   * thread, WORKER_YIELD_ELU). Optional: an adapter without it does not count this.
   */
  workersYielded?(seconds: number): void;
  /** /admin refused a token. Optional: an adapter without it does not count this. */
  adminSignInRefused?(via: AdminSignInVia, reason: AdminSignInRefusal): void;
  /** The text a scraper reads at GET /metrics. */
  exposition(): Promise<{ contentType: string; text: string }>;
}

/** Maps the error a delivery was refused with to its result; unexpected errors are `error`. */
export function deliveryResult(error: unknown): DeliveryResult {
  if (error instanceof SignatureError) return 'invalid_signature';
  if (error instanceof BadRequestError || error instanceof UnsupportedMediaTypeError || error instanceof UnknownProviderError) return 'bad_request';
  // Every 503 is one the provider retries, whatever its cause.
  if (error instanceof InboxError && error.statusCode === 503) return 'unavailable';
  return 'error';
}
