import { ignored, metadataString, type PaymentState } from '../../model/payment-event.js';
import { isRecord } from '../../model/json.js';
import type { Normalizer } from '../provider.js';

/** PayU amounts are decimal rupee strings ("1500.00"); converted without floating point. */
export function rupeesToPaise(amount: string | undefined): number | null {
  const match = /^(\d{1,13})(?:\.(\d{1,2}))?$/.exec(amount?.trim() ?? '');
  if (!match) return null;
  return Number(match[1]) * 100 + Number((match[2] ?? '').padEnd(2, '0'));
}

function stateOf(status: string, unmappedStatus: string): PaymentState | null {
  switch (status) {
    case 'success':
      return unmappedStatus === 'auth' ? 'authorized' : 'captured';
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

/** PayU callbacks -> payment states. Each attempt has its own mihpayid, which identifies the payment. */
export const payuToCanonical: Normalizer = ({ payload }) => {
  if (!isRecord(payload)) return ignored('payu payload is not an object');
  const field = (name: string): string => (typeof payload[name] === 'string' ? payload[name].trim() : '');
  const state = stateOf(field('status').toLowerCase(), field('unmappedstatus').toLowerCase());
  if (state === null) return ignored(`no business meaning: payu status "${field('status')}"`);
  if (field('mihpayid') === '') return ignored('payu callback carries no mihpayid');
  return {
    kind: 'payment',
    paymentId: field('mihpayid'),
    state,
    amountMinor: rupeesToPaise(field('amount')),
    currency: 'INR',
    userId: metadataString(payload.udf1),
    courseId: metadataString(payload.udf2),
    email: metadataString(payload.email),
    metadata: Object.fromEntries(UDF_FIELDS.map((name): [string, string] => [name, field(name)]).filter(([, value]) => value !== '')),
  };
};
