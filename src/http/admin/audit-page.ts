import type { AdminAction } from '../../admin/audit.js';
import { html, table, type SafeHtml } from './html.js';
import type { PageContext } from './page-context.js';
import { document } from './page-layout.js';
import { time } from './page-parts.js';
import { ADMIN_ACTION_WORDS, inWords } from './words.js';

/** Admin actions, one a row; the event page shows those about its event. */
export function auditTable(actions: AdminAction[]): SafeHtml {
  return table(
    [
      ['At', (a) => time(a.at)],
      ['Actor', (a) => a.actor],
      ['Role', (a) => a.role],
      ['Action', (a) => inWords(ADMIN_ACTION_WORDS, a.action)],
      ['Target', (a) => a.target],
      ['Reason', (a) => a.reason ?? ''],
      ['Result', (a) => a.result ?? '', 'mono'],
    ],
    actions,
    { empty: 'None.', className: 'audit' },
  );
}

export function auditPage(context: PageContext, actions: AdminAction[]): string {
  return document(
    'Audit',
    html`<h1>Admin actions</h1>
      ${auditTable(actions)}`,
    context,
  );
}
