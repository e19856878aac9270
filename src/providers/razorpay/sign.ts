import { hmacSha256Hex } from '../digest.js';

/** The headers Razorpay sends with `body`: the HMAC-SHA256 of the body, and the event id. The verifier's counterpart, for the simulator. */
export function razorpaySignedHeaders(body: string, secret: string, eventId: string): Record<string, string> {
  return { 'content-type': 'application/json', 'x-razorpay-signature': hmacSha256Hex(secret, body), 'x-razorpay-event-id': eventId };
}
