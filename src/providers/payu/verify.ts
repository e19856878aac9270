import type { PayuSettings } from '../../config/settings.js';
import { BadRequestError, SignatureError, UnsupportedMediaTypeError } from '../../errors.js';
import { bodyText, identifier, parseJsonObject } from '../payload.js';
import { digestMatches, sha512Hex } from '../digest.js';
import { headerValue, keptHeaders } from '../headers.js';
import type { Verifier } from '../provider.js';
import type { RawDelivery, VerifiedEvent } from '../../model/delivery.js';

export type PayuFields = Record<string, string>;

/** The posted fields after `status` in the reverse hash, in hash order. */
const HASHED_AFTER_STATUS = ['udf5', 'udf4', 'udf3', 'udf2', 'udf1', 'email', 'firstname', 'productinfo', 'amount', 'txnid'] as const;
const HASHED_FIELDS = ['additionalCharges', 'status', ...HASHED_AFTER_STATUS] as const;

/**
 * The reverse (response) hash, as PayU's SDKs build it:
 *   [additionalCharges|]SALT|status||||||udf5|udf4|udf3|udf2|udf1|email|firstname|productinfo|amount|txnid|key
 * The five empty slots are udf10..udf6. `additionalCharges` is prefixed whenever the field is present,
 * even empty (payu-websdk checks presence). A missing field counts as "" on purpose (the SDK would
 * write "undefined").
 */
export function payuReverseHash(fields: PayuFields, salt: string, merchantKey: string): string {
  const field = (name: string): string => fields[name] ?? '';
  const parts = [salt, field('status'), '', '', '', '', '', ...HASHED_AFTER_STATUS.map(field), merchantKey];
  if ('additionalCharges' in fields) parts.unshift(field('additionalCharges'));
  return sha512Hex(parts.join('|'));
}

/**
 * More fields than any PayU callback carries (about 70): the body is parsed before it can be
 * verified, so an unsigned one must not make the parser build more than this.
 */
export const MAX_PAYU_FIELDS = 256;

/** How a PayU body is encoded, from its Content-Type: form-encoded callbacks, or JSON (some products). */
export function payuMediaType(headers: RawDelivery['headers']): 'form' | 'json' {
  const mediaType = (headerValue(headers, 'content-type') ?? '').split(';')[0]!.trim().toLowerCase();
  if (mediaType === 'application/x-www-form-urlencoded') return 'form';
  if (mediaType === 'application/json') return 'json';
  throw new UnsupportedMediaTypeError('PayU callbacks must be application/x-www-form-urlencoded or application/json');
}

/** PayU's fields, from a form or a flat JSON object; both carry the same fields. */
export function parsePayuFields(headers: RawDelivery['headers'], body: Buffer): PayuFields {
  return payuMediaType(headers) === 'form' ? formFields(bodyText(body)) : jsonFields(body);
}

function formFields(text: string): PayuFields {
  const fields = Object.create(null) as PayuFields;
  let count = 0;
  // URLSearchParams decodes "+" as a space and %XX escapes, exactly what the hash is computed over.
  for (const [name, value] of new URLSearchParams(text)) {
    if (++count > MAX_PAYU_FIELDS) throw new BadRequestError(`more than ${MAX_PAYU_FIELDS} fields`, 'malformed_body');
    // A repeated field would make the hashed value ambiguous.
    if (name in fields) throw new BadRequestError(`field "${name}" appears more than once`, 'malformed_body');
    fields[name] = value;
  }
  return fields;
}

function jsonFields(body: Buffer): PayuFields {
  // Fields are strings: nothing nested is parsed (a deep body would cost the parser its depth).
  const object = parseJsonObject(body, { maxDepth: 1 });
  if (Object.keys(object).length > MAX_PAYU_FIELDS) throw new BadRequestError(`more than ${MAX_PAYU_FIELDS} fields`, 'malformed_body');
  const fields = Object.create(null) as PayuFields;
  for (const [name, value] of Object.entries(object)) {
    if (typeof value === 'string') fields[name] = value;
    else if (typeof value === 'number' || typeof value === 'boolean') fields[name] = String(value);
    else if (value === null) fields[name] = '';
    else throw new BadRequestError(`field "${name}" must be a string, not an object`, 'malformed_body');
  }
  return fields;
}

export function createPayuVerifier(settings: PayuSettings): Verifier {
  return {
    verify({ headers, body }: RawDelivery): VerifiedEvent {
      const fields = parsePayuFields(headers, body);
      const received = fields.hash;
      if (received === undefined || received === '') throw new SignatureError('missing hash field');
      const expected = payuReverseHash(fields, settings.merchantSalt, settings.merchantKey);
      if (!digestMatches(received, expected)) {
        throw new SignatureError('hash does not match the posted fields for PAYU_MERCHANT_SALT');
      }
      // payu-websdk hashes with the configured key and never looks at the posted one; we also require
      // them to match so a callback for another merchant account is refused.
      if (fields.key !== settings.merchantKey) {
        throw new SignatureError('posted key does not match PAYU_MERCHANT_KEY');
      }
      // "|" joins the hashed fields: with one inside a value, the same hash also fits the posted
      // values split differently (udf2="a|b", udf1="c" hashes like udf2="a", udf1="b|c").
      const ambiguous = HASHED_FIELDS.find((name) => fields[name]?.includes('|'));
      if (ambiguous !== undefined) {
        throw new BadRequestError(`field "${ambiguous}" contains "|", which makes the hash ambiguous`, 'malformed_body');
      }

      // Keyed by hashed fields only: mihpayid is not hashed, so a callback replayed with it edited
      // would otherwise pass as another payment. A txnid that succeeded cannot be used again, so
      // txnid:status is one success per transaction; its failed attempts share one key.
      const transaction = identifier(fields.txnid, 'transaction id (txnid)', 'missing_event_id');
      const status = identifier(fields.status, 'status', 'missing_event_id').toLowerCase();
      return {
        provider: 'payu',
        eventId: identifier(`${transaction}:${status}`, 'event id (txnid:status)'),
        eventType: identifier(`payment.${status}`, 'event type'),
        payload: JSON.stringify(fields),
        parsedPayload: fields,
        headers: keptHeaders(headers, ['content-type']),
      };
    },
  };
}
