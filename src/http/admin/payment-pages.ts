import type { PaymentListFilter, PaymentPage } from '../../admin/payment-list.js';
import type { PaymentDetailView } from '../../admin/payment-view.js';
import { PROVIDER_NAMES } from '../../model/delivery.js';
import { PAYMENT_STATE_ORDER, type PaymentMetadata } from '../../model/payment-event.js';
import { html, path, table, type SafeHtml } from './html.js';
import { document, eventsTable, facts, option, outboxTable, statusCell, time, type PageContext } from './pages.js';

/** An amount as stored, in the currency's smallest unit (the labels say so). */
const amountText = ({ amount, currency }: { amount: number | null; currency: string | null }) => (amount === null ? '' : `${amount} ${currency ?? ''}`.trim());

function metadataList(metadata: PaymentMetadata): SafeHtml | string {
  const entries = Object.entries(metadata);
  if (entries.length === 0) return 'none';
  return html`<ul class="metadata">
    ${entries.map(([key, value]) => html`<li><span class="mono">${key}</span>: ${value}</li>`)}
  </ul>`;
}

export function paymentsPage(context: PageContext, query: Record<string, string>, filter: PaymentListFilter, page: PaymentPage): string {
  const next = page.nextCursor ? `/admin/payments?${new URLSearchParams({ ...query, cursor: page.nextCursor }).toString()}` : null;
  return document(
    'Payments',
    html`<h1>Payments</h1>
      <p>Newest first, by the time an event last changed them.</p>
      <form class="filters" method="get" action="/admin/payments">
        <label
          >Provider<select name="provider">
            ${option('', filter.provider, 'any')}${PROVIDER_NAMES.map((p) => option(p, filter.provider))}
          </select></label
        >
        <label
          >State<select name="status">
            ${option('', filter.status, 'any')}${PAYMENT_STATE_ORDER.map((s) => option(s, filter.status))}
          </select></label
        >
        <label>Updated from (UTC)<input name="from" value="${query.from ?? ''}" /></label><label>to<input name="to" value="${query.to ?? ''}" /></label
        ><label>E-mail or metadata value (exact; the last 30 days unless from/to say)<input name="q" value="${query.q ?? ''}" /></label> <button type="submit">Filter</button>
        <a href="/admin/payments">clear</a>
      </form>
      ${table(
        [
          ['Payment', (p) => html`<a href="${path`/admin/payments/${p.provider}/${p.paymentId}`}">${p.paymentId}</a>`, 'mono'],
          ['Provider', (p) => p.provider],
          ['State', (p) => statusCell(p.status)],
          ['Amount (minor units)', (p) => amountText(p)],
          ['Updated (UTC)', (p) => time(p.updatedAt)],
        ],
        page.payments,
        { empty: 'No payments match.', className: 'payments' },
      )}${next ? html`<p><a href="${next}">Older payments →</a></p>` : ''}`,
    context,
  );
}

export function paymentPage(context: PageContext, detail: PaymentDetailView): string {
  const { payment, order } = detail;
  return document(
    `Payment ${detail.paymentId}`,
    html`<h1>Payment <span class="mono">${detail.paymentId}</span> (${detail.provider})</h1>
      ${
        payment
          ? facts([
              ['State', statusCell(payment.status)],
              ['Amount (minor units)', amountText(payment)],
              ['User', payment.userId],
              ['Course', payment.courseId],
              ['E-mail', payment.email],
              ['First seen (UTC)', time(payment.createdAt)],
              ['Updated (UTC)', time(payment.updatedAt)],
              ['Metadata', metadataList(payment.metadata)],
            ])
          : html`<p>No event of it has been processed yet.</p>`
      }
      <h2>Events in received order (the states it moved through)</h2>
      ${eventsTable(detail.events)}${detail.moreEvents ? html`<p>More events exist than shown.</p>` : ''}
      <h2>Order</h2>
      ${
        order
          ? facts([
              ['Order', order.id],
              ['Status', statusCell(order.status)],
              ['Amount (minor units)', amountText(order)],
              ['User', order.userId],
              ['Course', order.courseId],
              ['Created (UTC)', time(order.createdAt)],
              ['Updated (UTC)', time(order.updatedAt)],
            ])
          : html`<p>None.</p>`
      }
      <h2>Enrollments</h2>
      ${table(
        [
          ['Enrollment', (e) => e.id],
          ['User', (e) => e.userId, 'mono'],
          ['Course', (e) => e.courseId, 'mono'],
          ['Status', (e) => statusCell(e.status)],
          ['Created (UTC)', (e) => time(e.createdAt)],
          ['Updated (UTC)', (e) => time(e.updatedAt)],
        ],
        detail.enrollments,
        { empty: 'None.', className: 'enrollments' },
      )}
      <h2>Outbox rows</h2>
      ${outboxTable(context, detail.outbox)}`,
    context,
  );
}
