import { payuReverseHash } from './verify.js';

/** A PayU callback as a form body, with the merchant key and the reverse hash PayU adds. The verifier's counterpart, for the simulator. */
export function payuSignedBody(fields: Record<string, string>, salt: string, merchantKey: string): string {
  const withKey = { key: merchantKey, ...fields };
  return new URLSearchParams({ ...withKey, hash: payuReverseHash(withKey, salt, merchantKey) }).toString();
}
