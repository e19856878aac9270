import type { Overview } from '../../admin/overview.js';
import { html, table, type SafeHtml } from './html.js';
import type { PageContext } from './page-context.js';
import { document } from './page-layout.js';
import { time } from './page-parts.js';

/** Refused deliveries: the overview shows the last few, the rejections page many more. */
export function rejectionsTable(rows: Overview['recentRejections']): SafeHtml {
  return table(
    [
      ['At', (r) => time(r.at)],
      ['Provider', (r) => r.provider],
      ['Status', (r) => r.statusCode],
      ['Reason', (r) => r.reason, 'mono'],
      ['Remote address', (r) => r.remoteAddress ?? ''],
      ['Body bytes', (r) => r.bodyBytes ?? ''],
    ],
    rows,
    { empty: 'None.' },
  );
}

export function rejectionsPage(context: PageContext, rows: Overview['recentRejections']): string {
  return document(
    'Rejected deliveries',
    html`<h1>Rejected deliveries</h1>
      <p>The most recent refusals, kept in a fixed ring of rows (never the body or a signature).</p>
      ${rejectionsTable(rows)}`,
    context,
  );
}
