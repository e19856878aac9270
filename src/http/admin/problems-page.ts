import { may } from '../../admin/access.js';
import type { BulkReplayJob } from '../../admin/bulk-replays.js';
import { STUCK_KIND_LABELS, type StuckReport } from '../../ops/stuck.js';
import { bulkJobsTable } from './bulk-replay-pages.js';
import { html, path, table } from './html.js';
import type { PageContext } from './page-context.js';
import { document } from './page-layout.js';
import { csrfField, option, time } from './page-parts.js';
import { inWords } from './words.js';

export function problemsPage(context: PageContext, report: StuckReport, bulkJobs: BulkReplayJob[]): string {
  const counts = may(context.actor, 'bulk_replay_count');
  return document(
    'Failed & stuck',
    html`<h1>Failed &amp; stuck</h1>
      <p>
        ${report.total === 0 ? 'Nothing needs an operator.' : `${report.total} need an operator.`} Counts: ${report.counts.failed} failed, ${report.counts.expired_lease} with an
        expired lease, ${report.counts.old_received} received and never processed; outbox ${report.outboxCounts.failed} failed, ${report.outboxCounts.overdue} overdue.
      </p>
      ${
        counts
          ? html`<h2>Bulk replay</h2>
              <form class="filters" method="post" action="/admin/bulk-replay/count">
                ${csrfField(context)}
                <label
                  >Status<select name="status">
                    ${option('failed', 'failed')}${option('processed', undefined)}
                  </select></label
                >
                <label
                  >Provider<select name="provider">
                    ${option('', undefined, 'any')}${['stripe', 'razorpay', 'payu'].map((p) => option(p, undefined))}
                  </select></label
                >
                <label>Type<input name="type" /></label><label>Received from<input name="from" /></label><label>to<input name="to" /></label
                ><button type="submit" id="bulk-count">Count</button>
              </form>`
          : ''
      }
      <h2>Events</h2>
      ${table(
        [
          ['Id', (e) => html`<a href="${path`/admin/events/${e.id}`}">${e.id}</a>`],
          ['Kind', (e) => STUCK_KIND_LABELS[e.kind]],
          ['Provider', (e) => e.provider],
          ['Event id', (e) => e.eventId, 'mono'],
          ['Type', (e) => e.eventType, 'mono'],
          ['Attempts', (e) => e.attempts],
          ['Last error', (e) => e.lastError ?? '', 'mono'],
          ['Received', (e) => time(e.createdAt)],
        ],
        report.events,
      )}
      <h2>Outbox</h2>
      ${table(
        [
          ['Id', (row) => row.id],
          ['State', (row) => row.state],
          ['Kind', (row) => inWords(context.outboxKinds, row.kind)],
          ['Key', (row) => row.idempotencyKey, 'mono'],
          ['Attempts', (row) => row.attempts],
          ['Last error', (row) => row.lastError ?? '', 'mono'],
        ],
        report.outbox,
      )}
      <h2>Bulk replays</h2>
      ${bulkJobsTable(bulkJobs)}
      <p><a href="/admin/outbox?status=failed">Retry outbox rows</a></p>`,
    context,
  );
}
