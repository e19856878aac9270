import type { RazorpaySettings } from '../../config/settings.js';
import { SignatureError } from '../../errors.js';
import { identifier, parseJsonObject } from '../payload.js';
import { anyDigestMatches, hmacSha256Hex } from '../digest.js';
import { headerValue, keptHeaders } from '../headers.js';
import type { Verifier } from '../provider.js';
import type { RawDelivery, VerifiedEvent } from '../../model/delivery.js';

/** X-Razorpay-Signature is hex(HMAC-SHA256(secret, raw body)); the event id travels only in a header. */
export function createRazorpayVerifier(settings: RazorpaySettings): Verifier {
  return {
    verify({ headers, body }: RawDelivery): VerifiedEvent {
      const signature = headerValue(headers, 'x-razorpay-signature');
      if (signature === undefined) throw new SignatureError('missing X-Razorpay-Signature header');
      const expected = settings.secrets.map((secret) => hmacSha256Hex(secret, body));
      if (!anyDigestMatches([signature], expected)) {
        throw new SignatureError('X-Razorpay-Signature does not match the raw body for any configured RAZORPAY_WEBHOOK_SECRET');
      }

      const eventId = identifier(headerValue(headers, 'x-razorpay-event-id'), 'event id (X-Razorpay-Event-Id header)', 'missing_event_id');
      const event = parseJsonObject(body);
      return {
        provider: 'razorpay',
        eventId,
        eventType: identifier(event.event ?? 'unknown', 'event type (event)'),
        payload: body.toString('utf8'),
        parsedPayload: event,
        headers: keptHeaders(headers, ['x-razorpay-signature', 'x-razorpay-event-id', 'content-type']),
      };
    },
  };
}
