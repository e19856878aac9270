import { may } from '../../admin/access.js';
import type { OutboxEntry } from '../../outbox/outbox-store.js';
import { html, path, table, type SafeHtml } from './html.js';
import type { PageContext } from './page-context.js';
import { document } from './page-layout.js';
import { csrfField, option, statusCell, time } from './page-parts.js';
import { inWords } from './words.js';

/** Outbox rows with, for an operator, a retry form on each failed or skipped one; the event and payment pages show theirs. */
export function outboxTable(context: PageContext, rows: OutboxEntry[]): SafeHtml {
  const operator = may(context.actor, 'outbox_retry');
  return table(
    [
      ['Id', (row) => row.id],
      ['Kind', (row) => inWords(context.outboxKinds, row.kind)],
      ['Key', (row) => row.idempotencyKey, 'mono'],
      ['Status', (row) => statusCell(row.status)],
      ['Attempts', (row) => row.attempts],
      ['Last error / outcome', (row) => row.lastError ?? row.outcome ?? '', 'mono'],
      ['Written', (row) => time(row.createdAt)],
      [
        '',
        (row) =>
          operator && (row.status === 'failed' || row.status === 'skipped')
            ? html`<form class="inline" method="post" action="${path`/admin/outbox/${row.id}/retry`}" data-confirm="Send this outbox row again?">
                ${csrfField(context)}<input name="reason" placeholder="reason" required /><button type="submit">Retry</button>
              </form>`
            : '',
      ],
    ],
    rows,
    { empty: 'No outbox rows.' },
  );
}

export function outboxPage(context: PageContext, status: string | undefined, rows: OutboxEntry[], message: string | null): string {
  return document(
    'Outbox',
    html`<h1>Outbox</h1>
      ${message ? html`<p class="notice">${message}</p>` : ''}
      <form class="filters" method="get" action="/admin/outbox">
        <label
          >Status<select name="status">
            ${option('', status, 'any')}${['pending', 'sending', 'sent', 'failed', 'skipped'].map((s) => option(s, status))}
          </select></label
        ><button type="submit">Show</button>
      </form>
      ${outboxTable(context, rows)}`,
    context,
  );
}
