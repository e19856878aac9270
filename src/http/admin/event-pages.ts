import { may } from '../../admin/access.js';
import type { EventListFilter, EventPage } from '../../admin/event-list.js';
import type { EventView } from '../../admin/event-view.js';
import type { ReplayItem } from '../../ops/replay.js';
import { capped, EVENT_ATTEMPT_ERROR_MAX } from '../../store/complete.js';
import { auditTable } from './audit-page.js';
import { html, path, table, type SafeHtml } from './html.js';
import { outboxTable } from './outbox-page.js';
import type { PageContext } from './page-context.js';
import { document } from './page-layout.js';
import { csrfField, facts, option, statusCell, time } from './page-parts.js';
import { REPLAY_RESULT_WORDS } from './words.js';

/** Events, each linking to its page and its payment's; the payment page lists its own with it. */
export function eventsTable(events: EventPage['events']): SafeHtml {
  return table(
    [
      ['Id', (e) => html`<a href="${path`/admin/events/${e.id}`}">${e.id}</a>`],
      ['Received', (e) => time(e.receivedAt)],
      ['Provider', (e) => e.provider],
      ['Event id', (e) => e.eventId, 'mono'],
      ['Type', (e) => e.type, 'mono'],
      ['Status', (e) => statusCell(e.status)],
      ['Attempts', (e) => e.attempts],
      ['Payment', (e) => (e.paymentId ? html`<a href="${path`/admin/payments/${e.provider}/${e.paymentId}`}">${e.paymentId}</a>` : ''), 'mono'],
    ],
    events,
    { empty: 'No events match.' },
  );
}

export function eventsPage(context: PageContext, query: Record<string, string>, filter: EventListFilter, page: EventPage): string {
  const field = (name: string, label: string, type = 'text') => html`<label>${label}<input type="${type}" name="${name}" value="${query[name] ?? ''}" /></label>`;
  const next = page.nextCursor ? `/admin/events?${new URLSearchParams({ ...query, cursor: page.nextCursor }).toString()}` : null;
  return document(
    'Events',
    html`<h1>Events</h1>
      <form class="filters" method="get" action="/admin/events">
        <label
          >Provider<select name="provider">
            ${option('', filter.provider, 'any')}${['stripe', 'razorpay', 'payu'].map((p) => option(p, filter.provider))}
          </select></label
        >
        <label
          >Status<select name="status">
            ${option('', filter.status, 'any')}${['received', 'processing', 'processed', 'failed'].map((s) => option(s, filter.status))}
          </select></label
        >
        ${field('type', 'Type')}${field('paymentId', 'Payment id')}${field('eventId', 'Event id')}${field('email', 'Payer e-mail')}${field('from', 'Received from (UTC)')}${field('to', 'to')}${field('q', 'Payload contains (in the window)')}
        <button type="submit">Filter</button> <a href="/admin/events">clear</a>
      </form>
      ${eventsTable(page.events)}${next ? html`<p><a href="${next}">Older events →</a></p>` : ''}`,
    context,
  );
}

export function eventPage(context: PageContext, view: EventView, dryRun: ReplayItem | null, message: string | null): string {
  const operator = may(context.actor, 'replay');
  const replayForms = !operator
    ? html`<p>Replaying needs the operator role.</p>`
    : dryRun
      ? html`<div class="notice">
          <p>
            Dry run: replaying would cause
            <strong class="mono">${dryRun.transition ?? ''}</strong> (${REPLAY_RESULT_WORDS[dryRun.result]}${dryRun.detail ? html`: ${dryRun.detail}` : ''}).
          </p>
          <form method="post" action="${path`/admin/events/${view.id}/replay`}" data-confirm="Replay this event now?">
            ${csrfField(context)}<input type="hidden" name="dryRun" value="false" /><label>Reason <input name="reason" required size="50" /></label>
            <button type="submit" id="confirm-replay">Confirm replay</button>
          </form>
        </div>`
      : html`<form method="post" action="${path`/admin/events/${view.id}/replay`}">
          ${csrfField(context)}<input type="hidden" name="dryRun" value="true" /><button type="submit" id="dry-run">Replay… (dry run first)</button>
        </form>`;
  return document(
    `Event ${view.id}`,
    html`<h1>Event ${view.id}: <span class="mono">${view.eventId}</span></h1>
      ${message ? html`<p class="notice">${message}</p>` : ''}
      ${facts([
        ['Provider', view.provider],
        ['Type', html`<span class="mono">${view.type}</span>`],
        ['Status', statusCell(view.status)],
        ['Payment', view.paymentId ? html`<a class="mono" href="${path`/admin/payments/${view.provider}/${view.paymentId}`}">${view.paymentId}</a>` : 'none'],
        ['Received', time(view.receivedAt)],
        ['Processed', time(view.processedAt)],
        ['Attempts', view.attempts],
        ['Next attempt', time(view.nextAttemptAt)],
        ['Lease', view.lease.owner && view.lease.expiresAt ? `${view.lease.owner} until ${time(view.lease.expiresAt)}` : 'none'],
        ['Last error', html`<span class="mono">${view.lastError === null ? '' : capped(view.lastError, EVENT_ATTEMPT_ERROR_MAX)}</span>`],
        ['Outcome', html`<span class="mono">${view.outcome ?? ''}</span>`],
      ])}
      <h2>Replay</h2>
      ${replayForms}
      <h2>Timeline</h2>
      ${table(
        [
          ['At', (t) => time(t.at)],
          ['Until', (t) => time(t.until)],
          ['What', (t) => t.what],
          ['By', (t) => t.by ?? '', 'mono'],
          ['Detail', (t) => t.detail ?? '', 'mono'],
        ],
        view.timeline,
        { className: 'timeline' },
      )}
      <h2>Admin actions on this event</h2>
      ${auditTable(view.actions)}
      <h2>Payment</h2>
      ${
        view.payment
          ? facts([
              ['Status', view.payment.status],
              ['Amount (minor units)', view.payment.amount === null ? '' : `${view.payment.amount} ${view.payment.currency ?? ''}`],
              ['Updated', time(view.payment.updatedAt)],
            ])
          : html`<p>No payment state recorded.</p>`
      }
      <h2>Outbox effects of its payment</h2>
      ${outboxTable(context, view.outbox)}
      <h2>Headers kept (signatures never shown)</h2>
      <pre>${JSON.stringify(view.headers, null, 2)}</pre>
      <h2>Payload (pretty)</h2>
      <pre id="payload-pretty">${view.payloadPretty ?? 'not JSON: see below'}</pre>
      <h2>Payload as received (secret fields hidden)</h2>
      <pre id="payload-raw">${view.payload}</pre>`,
    context,
  );
}
