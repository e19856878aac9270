import { isRecord } from './json.js';

/**
 * Names of headers and payload fields whose values prove a delivery's or a caller's authenticity, or
 * let someone act as them: provider signatures (stripe-signature, x-razorpay-signature, PayU's
 * `hash`), credentials (authorization, cookie) and secrets (Stripe's `client_secret`). The one rule
 * every output follows: the dashboard, the admin API, the CLI and the logs.
 */
const SECRET_NAME = /signature|authorization|cookie|hash|secret|password/i;

/** What a secret field's value is shown as. */
export const HIDDEN = '[hidden]';

export function isSecretName(name: string): boolean {
  return SECRET_NAME.test(name);
}

/** An event's stored headers (JSON text) as they may be shown: those with a secret name left out. */
export function shownHeaders(stored: string): Record<string, string> {
  const headers = JSON.parse(stored) as Record<string, string>;
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !isSecretName(name)));
}

/**
 * An event's stored payload as it may be shown: the text itself when no field has a secret name;
 * otherwise the document written anew (compact JSON) with the value of every such field, at any depth,
 * replaced by HIDDEN. Written anew rather than edited, because a value JSON.parse does not return (a
 * key given twice) would survive an edit of the text. Text that is not JSON is returned as it is.
 */
export function shownPayload(stored: string): string {
  let document: unknown;
  try {
    document = JSON.parse(stored);
  } catch {
    return stored;
  }
  const hidden = { found: false };
  const shown = hideSecrets(document, hidden);
  return hidden.found ? JSON.stringify(shown) : stored;
}

/** A copy of `value` with the value of each field with a secret name (null apart: it tells nothing) replaced by HIDDEN. */
function hideSecrets(value: unknown, hidden: { found: boolean }): unknown {
  if (Array.isArray(value)) return value.map((item) => hideSecrets(item, hidden));
  if (!isRecord(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([name, field]) => {
      if (isSecretName(name) && field !== null) {
        hidden.found = true;
        return [name, HIDDEN];
      }
      return [name, hideSecrets(field, hidden)];
    }),
  );
}
