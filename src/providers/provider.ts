import type { ProviderName, RawDelivery, VerifiedEvent } from '../model/delivery.js';
import type { CanonicalEvent } from '../model/payment-event.js';

/** Authenticates deliveries with the configured secrets. Throws SignatureError, BadRequestError, ... */
export interface Verifier {
  verify(delivery: RawDelivery): VerifiedEvent;
}

/** What a stored event means for a payment; pure, needs no secret. */
export type Normalizer = (event: { eventType: string; payload: unknown }) => CanonicalEvent;

/**
 * One payment provider: how to authenticate its deliveries and how to read its events. Each provider
 * folder (stripe/, razorpay/, payu/) exports one of these, built from the same two files.
 */
export interface ProviderDefinition<Settings> {
  name: ProviderName;
  /** The environment variables that configure it, named in the 503 answer when they are missing. */
  variables: string[];
  createVerifier(settings: Settings): Verifier;
  toCanonical: Normalizer;
}
