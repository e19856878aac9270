import type { DeliveryResult } from '../../observability/metrics.js';
import type { ReplayItem } from '../../ops/replay.js';

/**
 * The dashboard shows people words, never the codes the inbox stores and its API answers with. A code
 * is shown with its underscores as spaces unless it has words of its own in `words`, so that a code
 * nothing here knows (an outbox kind of a team's own domain, a new audit action) still reads as words.
 */
export function inWords(words: Readonly<Record<string, string>>, code: string): string {
  return Object.hasOwn(words, code) ? words[code]! : code.replaceAll('_', ' ');
}

export const REPLAY_RESULT_WORDS: Readonly<Record<ReplayItem['result'], string>> = {
  would_replay: 'would be replayed',
  processed: 'processed',
  failed: 'failed',
  skipped: 'skipped',
};

export const DELIVERY_RESULT_WORDS: Readonly<Record<DeliveryResult, string>> = {
  accepted: 'accepted',
  duplicate: 'duplicate',
  invalid_signature: 'invalid signature',
  bad_request: 'bad request',
  unavailable: 'unavailable (503)',
  error: 'internal error',
};

/** Audit actions (admin/actions.ts) whose code, spaced out, would not say what happened. */
export const ADMIN_ACTION_WORDS: Readonly<Record<string, string>> = {
  bulk_replay_cancel: 'bulk replay cancel asked',
  bulk_replay_error: 'bulk replay stopped by an error',
};

/** A bulk replay's filter fields (the API's parameter names) as the dashboard says them. */
const FILTER_WORDS: Readonly<Record<string, string>> = { paymentId: 'payment', from: 'received from', to: 'received before' };

/** "status failed, provider stripe, received from 2026-12-01": the fields that are set, in words. */
export function filterInWords(filter: Readonly<Record<string, unknown>>): string {
  return Object.entries(filter)
    .filter(([, value]) => value !== undefined && value !== null && value !== '')
    .map(([name, value]) => `${inWords(FILTER_WORDS, name)} ${typeof value === 'string' ? value : JSON.stringify(value)}`)
    .join(', ');
}
