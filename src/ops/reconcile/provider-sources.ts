import type { Kysely } from 'kysely';
import type pLimit from 'p-limit';
import type { ReconcileApis } from '../../config/settings.js';
import { toDbTime, type InboxDatabase } from '../../db/schema.js';
import type { ProviderName, VerifiedEvent } from '../../model/delivery.js';
import { readItems, type ApiClientOptions } from '../../providers/api-client.js';
import { PAYU_VERIFY_BATCH, payuReconcileEvent, payuVerifyApi } from '../../providers/payu/api.js';
import { RAZORPAY_PAGE_SIZE, razorpayPaymentsApi, razorpayReconcileEvent, type RazorpayPayment } from '../../providers/razorpay/api.js';
import { stripeEventsApi } from '../../providers/stripe/api.js';

/** An event a provider's API reports, as it would be recorded. */
export interface Candidate {
  event: VerifiedEvent;
  /**
   * true: missing only when the payment's state here is behind the event's (the API reports states,
   * not events: Razorpay, PayU); false: missing whenever its key is unknown (Stripe's own events).
   */
  byState: boolean;
}

export interface CandidatePage {
  candidates: Candidate[];
  /** Items of the answer that could not be used, each an error of the run. */
  problems: string[];
  /** Where the next page starts, or null after the last. */
  next: string | null;
}

export interface ReconcileWindow {
  since: Date;
  until: Date;
}

/** One provider's listing, a page at a time from a cursor (null: the first page). */
export interface ReconcileSource {
  provider: ProviderName;
  page(cursor: string | null): Promise<CandidatePage>;
}

export interface SourceContext {
  db: Kysely<InboxDatabase>;
  now: Date;
  window: ReconcileWindow;
  client: ApiClientOptions;
  limit: ReturnType<typeof pLimit>;
  payuPendingOlderThanMs: number;
  /** Transactions an operator asks PayU about, besides the pending ones held here. */
  payuTxnids: string[];
}

const seconds = (date: Date) => Math.floor(date.getTime() / 1000);

/** The sources of the providers whose API credentials are set; the others are named in `disabled`. */
export function reconcileSources(apis: ReconcileApis, context: SourceContext): { sources: ReconcileSource[]; disabled: Array<{ provider: ProviderName; reason: string }> } {
  const sources: ReconcileSource[] = [];
  const disabled: Array<{ provider: ProviderName; reason: string }> = [];
  if (apis.stripe) sources.push(stripeSource(apis.stripe, context));
  else disabled.push({ provider: 'stripe', reason: 'STRIPE_API_KEY is not set (a restricted key that reads events)' });
  if (apis.razorpay) sources.push(razorpaySource(apis.razorpay, context));
  else disabled.push({ provider: 'razorpay', reason: 'RAZORPAY_KEY_ID and RAZORPAY_KEY_SECRET are not set' });
  if (apis.payu) sources.push(payuSource(apis.payu, context));
  else disabled.push({ provider: 'payu', reason: 'PAYU_MERCHANT_KEY and PAYU_MERCHANT_SALT are not set' });
  return { sources, disabled };
}

/** Stripe's events of the window, newest first; the cursor is the last event id of the page done. */
function stripeSource(settings: NonNullable<ReconcileApis['stripe']>, { window, client }: SourceContext): ReconcileSource {
  const api = stripeEventsApi(settings, client);
  return {
    provider: 'stripe',
    async page(cursor) {
      const page = await api.listEvents({ createdGte: seconds(window.since), createdLte: seconds(window.until), startingAfter: cursor });
      return { candidates: page.events.map((event) => ({ event, byState: false })), problems: page.problems, next: page.next };
    },
  };
}

/**
 * Razorpay's payments created in the window, then its refunds processed in the window (whose payments
 * are read one by one: they may be older). The cursor is `payments:<skip>` or `refunds:<skip>`.
 */
function razorpaySource(settings: NonNullable<ReconcileApis['razorpay']>, { window, client, limit }: SourceContext): ReconcileSource {
  const api = razorpayPaymentsApi(settings, client);
  const query = (skip: number) => ({ from: seconds(window.since), to: seconds(window.until), skip });
  const candidates = (payments: RazorpayPayment[]) => payments.flatMap((payment) => razorpayReconcileEvent(payment) ?? []).map((event) => ({ event, byState: true }));
  return {
    provider: 'razorpay',
    async page(cursor) {
      const [phase, skipText] = (cursor ?? 'payments:0').split(':');
      const skip = Number(skipText);
      if ((phase !== 'payments' && phase !== 'refunds') || !Number.isSafeInteger(skip)) throw new Error(`unreadable razorpay cursor "${cursor}"`);
      if (phase === 'payments') {
        const page = await api.listPayments(query(skip));
        return { candidates: candidates(page.items), problems: page.problems, next: page.full ? `payments:${skip + RAZORPAY_PAGE_SIZE}` : 'refunds:0' };
      }
      const page = await api.listRefunds(query(skip));
      const paymentIds = [...new Set(page.items.filter((id): id is string => id !== null))];
      const payments = await Promise.all(paymentIds.map((id) => limit(() => api.fetchPayment(id))));
      return { candidates: candidates(payments), problems: page.problems, next: page.full ? `refunds:${skip + RAZORPAY_PAGE_SIZE}` : null };
    },
  };
}

/**
 * PayU has no listing: verify_payment is asked about the transactions held here in a non-final state
 * for longer than the threshold, and those an operator names, in id order; the cursor is the last
 * transaction id done.
 */
function payuSource(settings: NonNullable<ReconcileApis['payu']>, context: SourceContext): ReconcileSource {
  const api = payuVerifyApi(settings, context.client);
  const perPage = PAYU_VERIFY_BATCH * 4;
  return {
    provider: 'payu',
    async page(cursor) {
      const pending = await context.db
        .selectFrom('payments')
        .select('payment_id')
        .where('provider', '=', 'payu')
        .where('status', '=', 'created')
        .where('created_at', '>=', toDbTime(context.window.since))
        .where('updated_at', '<=', toDbTime(new Date(context.now.getTime() - context.payuPendingOlderThanMs)))
        .execute();
      const all = [...new Set([...pending.map((row) => row.payment_id), ...context.payuTxnids])].sort();
      const todo = all.filter((txnid) => cursor === null || txnid > cursor);
      const txnids = todo.slice(0, perPage);
      const problems: string[] = [];
      const usable = txnids.filter((txnid) => {
        if (!txnid.includes('|')) return true;
        problems.push(`payu transaction id "${txnid.slice(0, 40)}" contains "|", which verify_payment cannot ask for`);
        return false;
      });
      const batches: string[][] = [];
      for (let i = 0; i < usable.length; i += PAYU_VERIFY_BATCH) batches.push(usable.slice(i, i + PAYU_VERIFY_BATCH));
      const answers = await Promise.all(batches.map((batch) => context.limit(() => api.verifyPayment(batch))));
      const found = answers.flatMap((answer) => [...answer].filter((entry): entry is [string, Record<string, unknown>] => entry[1] !== null));
      const read = readItems(found, ([txnid, detail]: [string, Record<string, unknown>]) => ({ event: payuReconcileEvent(txnid, detail), byState: true }), 'payu transaction');
      problems.push(...read.problems);
      const candidates: Candidate[] = read.items;
      return { candidates, problems, next: todo.length > perPage ? txnids.at(-1)! : null };
    },
  };
}
