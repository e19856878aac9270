import { BadRequestError } from '../../errors.js';
import type { VerifiedEvent } from '../../model/delivery.js';
import { requestJson, ProviderApiError, type ApiClientOptions } from '../api-client.js';
import { sha512Hex } from '../digest.js';
import { identifier } from '../payload.js';

/** Transactions asked in one verify_payment call (var1 takes several, "|"-separated). */
export const PAYU_VERIFY_BATCH = 25;

/** The fields of a transaction's details that a callback carries too, copied into the recorded event. */
const CALLBACK_FIELDS = [
  'mihpayid',
  'txnid',
  'status',
  'unmappedstatus',
  'productinfo',
  'firstname',
  'email',
  'udf1',
  'udf2',
  'udf3',
  'udf4',
  'udf5',
  'mode',
  'bank_ref_num',
  'error_code',
  'field9',
];

/**
 * The `verify_payment` command of PayU's post-service API: a form post of key, command, var1 (the
 * transaction ids) and hash = sha512(key|command|var1|salt), answered with the details of each.
 */
export function payuVerifyApi(settings: { merchantKey: string; merchantSalt: string; apiBase: string }, options: ApiClientOptions) {
  return {
    /** Each transaction's details, or null where PayU knows no such transaction. */
    async verifyPayment(txnids: string[]): Promise<Map<string, Record<string, unknown> | null>> {
      const command = 'verify_payment';
      const var1 = txnids.join('|');
      const form = new URLSearchParams({
        key: settings.merchantKey,
        command,
        var1,
        hash: sha512Hex([settings.merchantKey, command, var1, settings.merchantSalt].join('|')),
      });
      const url = new URL('/merchant/postservice.php?form=2', settings.apiBase);
      const body = await requestJson('payu', { method: 'POST', url, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: form.toString() }, options);
      const details = body.transaction_details;
      if (typeof details !== 'object' || details === null || Array.isArray(details)) {
        throw new ProviderApiError('payu', `verify_payment answered no transaction_details (status ${JSON.stringify(body.status)?.slice(0, 40)})`);
      }
      const found = new Map<string, Record<string, unknown> | null>();
      for (const txnid of txnids) {
        const detail = (details as Record<string, unknown>)[txnid];
        const known = typeof detail === 'object' && detail !== null && !Array.isArray(detail) && typeof (detail as { status?: unknown }).status === 'string';
        found.set(txnid, known && (detail as { status: string }).status.toLowerCase() !== 'not found' ? (detail as Record<string, unknown>) : null);
      }
      return found;
    },
  };
}

/**
 * The event recorded for a transaction PayU reports in a state not held here, keyed as its callback
 * would be (`<txnid>:<status>`), so a callback that arrives later is a duplicate of it.
 */
export function payuReconcileEvent(txnid: string, detail: Record<string, unknown>): VerifiedEvent {
  const fields: Record<string, string> = {};
  for (const name of CALLBACK_FIELDS) {
    const value = detail[name];
    if (typeof value === 'string' || typeof value === 'number') fields[name] = String(value);
  }
  // verify_payment names the amount `amt`; a callback names it `amount`.
  const amount = detail.amt ?? detail.amount;
  if (typeof amount === 'string' || typeof amount === 'number') fields.amount = String(amount);
  fields.txnid = identifier(txnid, 'transaction id (txnid)');
  // Only what was asked about is recorded: details that name another transaction are not.
  const answered = detail.txnid;
  if (answered !== undefined && (typeof answered !== 'string' || answered.trim() !== fields.txnid)) {
    throw new BadRequestError(`asked about transaction ${fields.txnid.slice(0, 40)}, answered about ${JSON.stringify(answered)?.slice(0, 40)}: not recorded`);
  }
  const status = identifier(fields.status, `status of transaction ${fields.txnid.slice(0, 40)}`).toLowerCase();
  if (!/^[a-z_]+$/.test(status)) throw new BadRequestError(`transaction ${txnid} has an unreadable status`);
  fields.status = status;
  return {
    provider: 'payu',
    eventId: identifier(`${fields.txnid}:${status}`, 'event id (txnid:status)'),
    eventType: identifier(`payment.${status}`, 'event type'),
    payload: JSON.stringify(fields),
    parsedPayload: fields,
    headers: {},
    source: 'reconcile',
  };
}
