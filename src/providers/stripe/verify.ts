import type { StripeSettings } from '../../config/settings.js';
import { SignatureError } from '../../errors.js';
import type { Verifier } from '../provider.js';
import type { RawDelivery, VerifiedEvent } from '../../model/delivery.js';
import { identifier, parseJsonObject } from '../payload.js';
import { anyDigestMatches, hmacSha256Hex } from '../digest.js';
import { headerValue, keptHeaders } from '../headers.js';

interface SignatureHeader {
  timestamp: number | null;
  v1: string[];
}

/**
 * Parses `t=<unix>,v1=<hex>[,v1=...][,v0=...]` the way stripe-node does: split on "," then "=", no
 * trimming, the last `t` wins, every scheme other than v1 is ignored (downgrade protection).
 */
export function parseSignatureHeader(header: string): SignatureHeader {
  const parsed: SignatureHeader = { timestamp: null, v1: [] };
  for (const item of header.split(',')) {
    const separator = item.indexOf('=');
    if (separator < 0) continue;
    const key = item.slice(0, separator);
    const value = item.slice(separator + 1);
    if (key === 't') parsed.timestamp = /^\d{1,12}$/.test(value) ? Number(value) : null;
    else if (key === 'v1') parsed.v1.push(value);
  }
  return parsed;
}

export function createStripeVerifier(settings: StripeSettings): Verifier {
  return {
    verify({ headers, body, receivedAt }: RawDelivery): VerifiedEvent {
      const header = headerValue(headers, 'stripe-signature');
      if (header === undefined) throw new SignatureError('missing Stripe-Signature header');
      const { timestamp, v1 } = parseSignatureHeader(header);
      if (timestamp === null) throw new SignatureError('Stripe-Signature header has no valid timestamp (t=)');
      if (v1.length === 0) throw new SignatureError('Stripe-Signature header has no v1 signature');

      const expected = settings.secrets.map((secret) => hmacSha256Hex(secret, `${timestamp}.`, body));
      if (!anyDigestMatches(v1, expected)) {
        throw new SignatureError('no v1 signature matches the raw body for any configured STRIPE_WEBHOOK_SECRET');
      }
      // Judged after the signature, as stripe-node does; future timestamps are accepted like the SDK.
      const age = Math.floor(receivedAt.getTime() / 1000) - timestamp;
      if (age > settings.toleranceSeconds) {
        throw new SignatureError(`signature timestamp is ${age}s old, beyond the ${settings.toleranceSeconds}s tolerance`);
      }

      const event = parseJsonObject(body);
      return {
        provider: 'stripe',
        eventId: identifier(event.id, 'event id (id)', 'missing_event_id'),
        eventType: identifier(event.type ?? 'unknown', 'event type (type)'),
        payload: body.toString('utf8'),
        parsedPayload: event,
        headers: keptHeaders(headers, ['stripe-signature', 'content-type']),
      };
    },
  };
}
