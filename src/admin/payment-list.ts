import { sql, type Expression, type ExpressionBuilder, type Kysely, type SqlBool } from 'kysely';
import { olderThan, type KeysetPosition } from '../db/keyset.js';
import { toDbTime, type InboxDatabase } from '../db/schema.js';
import { PROVIDER_NAMES } from '../model/delivery.js';
import { PAYMENT_STATE_ORDER, type PaymentState } from '../model/payment-event.js';
import { decodeCursor, DEFAULT_PAGE_SIZE, encodeCursor, MAX_PAGE_SIZE } from './event-list.js';
import { AdminInputError, integer, oneOf, text, time, type Query } from './input.js';
import { paymentListItem, type PaymentListItem } from './payment-view.js';

const DAY_MS = 24 * 3600_000;
/** `q` reads the metadata of the payments in its window, so that window is bounded (docs/operations.md has its cost). */
const SEARCH_WINDOW_DEFAULT_MS = 30 * DAY_MS;
const SEARCH_WINDOW_MAX_MS = 90 * DAY_MS;

export interface PaymentListFilter {
  provider?: string;
  status?: PaymentState;
  /** Updated at or after. */
  from?: Date;
  /** Updated before. */
  to?: Date;
  /** The payment's e-mail, exactly. */
  email?: string;
  /** A metadata key and its value, each exactly. */
  metadata?: { key: string; value: string };
  /** Exactly the payment's e-mail or one of its metadata values (the API's `q`: within [from, to) only). */
  q?: string;
  limit: number;
  /** Where the previous page ended: the last row's updated time and id. */
  after?: KeysetPosition;
}

export interface PaymentPage {
  payments: PaymentListItem[];
  /** Pass as `cursor` for the next (older) page; null on the last page. */
  nextCursor: string | null;
}

/**
 * Reads and checks the list's query parameters (the API's and the page's); each bad one is a 400
 * naming it. `now` ends the search window of `q` when `to` does not.
 */
export function parsePaymentFilter(query: Query, now: Date): PaymentListFilter {
  const cursor = text(query, 'cursor', 300);
  const filter: PaymentListFilter = {
    provider: oneOf(query, 'provider', PROVIDER_NAMES),
    status: oneOf(query, 'status', PAYMENT_STATE_ORDER),
    from: time(query, 'from'),
    to: time(query, 'to'),
    email: text(query, 'email', 320),
    q: text(query, 'q'),
    limit: integer(query, 'limit', { min: 1, max: MAX_PAGE_SIZE, fallback: DEFAULT_PAGE_SIZE }),
    after: cursor === undefined ? undefined : decodeCursor(cursor),
  };
  if (filter.from && filter.to && filter.from >= filter.to) throw new AdminInputError('to', 'must be later than from');
  if (filter.q !== undefined) {
    filter.to ??= now;
    filter.from ??= new Date(filter.to.getTime() - SEARCH_WINDOW_DEFAULT_MS);
    if (filter.to.getTime() - filter.from.getTime() > SEARCH_WINDOW_MAX_MS)
      throw new AdminInputError('q', `searches payments updated within at most ${SEARCH_WINDOW_MAX_MS / DAY_MS} days: narrow from and to`);
  }
  return filter;
}

/**
 * Whether the stored metadata holds one of `texts`. The metadata is the JSON.stringify of a flat
 * object of strings (domain/payments.ts), so `"key":"value"` between `{` or `,` and `,` or `}` is
 * exactly that entry: a quote inside a key or value is escaped there. `replace` compares byte for
 * byte on every store, where LIKE ignores ASCII case on SQLite.
 */
function metadataHolds(eb: ExpressionBuilder<InboxDatabase, 'payments'>, texts: string[]): Expression<SqlBool> {
  return eb.or(texts.map((piece) => sql<SqlBool>`replace(${sql.ref('metadata')}, ${piece}, '') <> ${sql.ref('metadata')}`));
}

const valueTexts = (value: string) => [',', '}'].map((end) => `:${JSON.stringify(value)}${end}`);
const entryTexts = (key: string, value: string) => ['{', ','].flatMap((start) => valueTexts(value).map((rest) => `${start}${JSON.stringify(key)}${rest}`));

/**
 * One page of payments, newest first by keyset on (updated_at, id): each page starts where the last
 * ended, so a deep page costs what the first does (an index per filter, migration 0030). A payment
 * that an event changes meanwhile moves to the top of the list. `q` and `metadata` read the metadata
 * of the payments the other filters leave, in list order, until a page is full.
 */
export async function listPayments(db: Kysely<InboxDatabase>, filter: PaymentListFilter): Promise<PaymentPage> {
  let query = db.selectFrom('payments').select(['id', 'provider', 'payment_id', 'status', 'amount', 'currency', 'updated_at']);
  if (filter.provider) query = query.where('provider', '=', filter.provider);
  if (filter.status) query = query.where('status', '=', filter.status);
  if (filter.from) query = query.where('updated_at', '>=', toDbTime(filter.from));
  if (filter.to) query = query.where('updated_at', '<', toDbTime(filter.to));
  if (filter.email) query = query.where('email', '=', filter.email);
  const { metadata, q } = filter;
  if (metadata) query = query.where((eb) => metadataHolds(eb, entryTexts(metadata.key, metadata.value)));
  if (q) query = query.where((eb) => eb.or([eb('email', '=', q), metadataHolds(eb, valueTexts(q))]));
  if (filter.after) query = query.where(olderThan('updated_at', filter.after));
  const rows = await query
    .orderBy('updated_at', 'desc')
    .orderBy('id', 'desc')
    .limit(filter.limit + 1)
    .execute();
  const page = rows.slice(0, filter.limit);
  const last = page.at(-1);
  return {
    payments: page.map(paymentListItem),
    nextCursor: rows.length > filter.limit && last ? encodeCursor(last.updated_at, last.id) : null,
  };
}
