import { hmacSha256Hex } from '../digest.js';

/** The headers Stripe sends with `body`: `t=<seconds>,v1=<HMAC-SHA256 of "t.body">`. The verifier's counterpart, for the simulator. */
export function stripeSignedHeaders(body: string, secret: string, now: Date): Record<string, string> {
  const t = Math.floor(now.getTime() / 1000);
  return { 'content-type': 'application/json', 'stripe-signature': `t=${t},v1=${hmacSha256Hex(secret, `${t}.`, body)}` };
}
