import type { PaymentListFilter, PaymentPage } from '../../admin/payment-list.js';
import type { PaymentDetailView } from '../../admin/payment-view.js';
import type { PaymentSection, SectionField } from '../../extension/domain-hooks.js';
import { PROVIDER_NAMES } from '../../model/delivery.js';
import { PAYMENT_STATE_ORDER, type PaymentMetadata } from '../../model/payment-event.js';
import { html, path, table, type Column, type SafeHtml } from './html.js';
import { eventsTable } from './event-pages.js';
import { outboxTable } from './outbox-page.js';
import type { PageContext } from './page-context.js';
import { document } from './page-layout.js';
import { facts, option, statusCell, time } from './page-parts.js';

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
        <label>Payer e-mail (exact)<input name="email" value="${query.email ?? ''}" /></label>
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

/** A domain's value as its format says: a time as the dashboard writes times, a state in its colour, an id fixed-width. */
function fieldValue({ value, format }: SectionField): SafeHtml | string | number | null {
  if (value === null) return null;
  if (format === 'time') return time(String(value));
  if (format === 'status') return statusCell(String(value));
  if (format === 'code') return html`<span class="mono">${value}</span>`;
  return value;
}

/** What one domain holds about the payment, under its own title and labels. */
function sectionHtml(section: PaymentSection): SafeHtml {
  const heading = html`<h2>${section.title}</h2>`;
  if (section.records.length === 0)
    return html`${heading}
      <p>None.</p>`;
  if (section.layout === 'fields') return html`${heading}${section.records.map((record) => facts(record.map((field) => [field.label, fieldValue(field)])))}`;
  const columns = section.records[0]!.map((field, index): Column<SectionField[]> => [field.label, (record) => (record[index] ? fieldValue(record[index]) : null)]);
  return html`${heading}${table(columns, section.records, { className: `section ${section.domain}` })}`;
}

export function paymentPage(context: PageContext, detail: PaymentDetailView): string {
  const { payment } = detail;
  return document(
    `Payment ${detail.paymentId}`,
    html`<h1>Payment <span class="mono">${detail.paymentId}</span> (${detail.provider})</h1>
      ${
        payment
          ? facts([
              ['State', statusCell(payment.status)],
              ['Amount (minor units)', amountText(payment)],
              ['E-mail', payment.email],
              ['First seen (UTC)', time(payment.createdAt)],
              ['Updated (UTC)', time(payment.updatedAt)],
              ['Metadata', metadataList(payment.metadata)],
            ])
          : html`<p>No event of it has been processed yet.</p>`
      }
      <h2>Events in received order (the states it moved through)</h2>
      ${eventsTable(detail.events)}${detail.moreEvents ? html`<p>More events exist than shown.</p>` : ''} ${detail.sections.map(sectionHtml)}
      <h2>Outbox rows</h2>
      ${outboxTable(context, detail.outbox)}`,
    context,
  );
}
