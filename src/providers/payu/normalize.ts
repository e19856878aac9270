import { ignored, metadataString, type PaymentState } from '../../model/payment-event.js';
import { isRecord } from '../../model/json.js';
import type { Normalizer } from '../provider.js';

/** PayU amounts are decimal rupee strings ("1500.00"); converted without floating point. */
export function rupeesToPaise(amount: string | undefined): number | null {
  const match = /^(\d{1,13})(?:\.(\d{1,2}))?$/.exec(amount?.trim() ?? '');
  if (!match) return null;
  return Number(match[1]) * 100 + Number((match[2] ?? '').padEnd(2, '0'));
}

/**
 * From `status` alone, which the reverse hash covers. `unmappedstatus` (whose `auth` marks a success
 * that is only authorised) is not hashed, so anyone holding a callback could change it: it is kept
 * in the payload as information, never read here.
 */
function stateOf(status: string): PaymentState | null {
  switch (status) {
    case 'success':
      return 'captured';
    case 'failure':
    case 'failed':
      return 'failed';
    case 'pending':
      return 'created';
    default:
      return null;
  }
}

/** The merchant's own fields of a PayU transaction (covered by the reverse hash). */
const UDF_FIELDS = ['udf1', 'udf2', 'udf3', 'udf4', 'udf5'];

/**
 * PayU callbacks -> payment states. The payment is the merchant's transaction (`txnid`, hashed); each
 * attempt's `mihpayid` is not hashed and stays in the payload as information (refunds, API calls).
 */
export const payuToCanonical: Normalizer = ({ payload }) => {
  if (!isRecord(payload)) return ignored('payu payload is not an object');
  const field = (name: string): string => (typeof payload[name] === 'string' ? payload[name].trim() : '');
  const state = stateOf(field('status').toLowerCase());
  if (state === null) return ignored(`no business meaning: payu status "${field('status')}"`);
  if (field('txnid') === '') return ignored('payu callback carries no txnid');
  return {
    kind: 'payment',
    paymentId: field('txnid'),
    state,
    amountMinor: rupeesToPaise(field('amount')),
    currency: 'INR',
    email: metadataString(payload.email),
    metadata: Object.fromEntries(UDF_FIELDS.map((name): [string, string] => [name, field(name)]).filter(([, value]) => value !== '')),
  };
};
