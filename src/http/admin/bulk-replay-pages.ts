import { may } from '../../admin/access.js';
import type { BulkReplayJob } from '../../admin/bulk-replays.js';
import { html, path, table, type SafeHtml } from './html.js';
import type { PageContext } from './page-context.js';
import { document } from './page-layout.js';
import { csrfField, facts, statusCell, time } from './page-parts.js';
import { filterInWords } from './words.js';

export function bulkConfirmPage(context: PageContext, fields: Record<string, string>, count: number): string {
  return document(
    'Bulk replay',
    html`<h1>Bulk replay</h1>
      <p class="notice">This filter selects <strong id="bulk-total">${count}</strong> events (${filterInWords(fields)}).</p>
      ${
        count === 0 || !may(context.actor, 'bulk_replay_start')
          ? html`<p>${count === 0 ? '' : 'Starting it needs the operator role. '}<a href="/admin/problems">Back</a></p>`
          : html`<form method="post" action="/admin/bulk-replay" data-confirm="Replay ${count} events?">
              ${csrfField(context)}${Object.entries(fields).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}" />`)}<input
                type="hidden"
                name="expectedCount"
                value="${count}"
              /><label>Reason <input name="reason" required size="50" /></label> <button type="submit" id="bulk-start">Replay ${count} events</button>
            </form>`
      }`,
    context,
  );
}

/** Recent bulk replays, each linking to its progress page. */
export function bulkJobsTable(jobs: BulkReplayJob[]): SafeHtml {
  return table(
    [
      ['Started', (job) => html`<a href="${path`/admin/bulk-replay/${job.id}`}">${time(job.startedAt)}</a>`],
      ['By', (job) => job.actor],
      ['State', (job) => statusCell(job.state)],
      ['Progress', (job) => `${job.done} of ${job.total}`],
      ['Reason', (job) => job.reason],
    ],
    jobs,
    { empty: 'None yet.' },
  );
}

export function bulkJobPage(context: PageContext, job: BulkReplayJob): string {
  const running = job.state === 'running';
  return document(
    'Bulk replay progress',
    html`<h1>Bulk replay</h1>
      ${facts([
        ['State', html`<span id="bulk-state">${job.state}</span>${job.cancelRequested && running ? ' (cancel asked: it stops after the event in hand)' : ''}`],
        ['Progress', `${job.done} of ${job.total}`],
        ['Processed / failed / skipped', `${job.counts.processed} / ${job.counts.failed} / ${job.counts.skipped}`],
        ['By', job.actor],
        ['Reason', job.reason],
        ['Filter', filterInWords(job.filter)],
        ['Run by', html`<span class="mono">${job.runner}</span> (last heard from ${time(job.heartbeatAt)})`],
        ['Error', job.error],
      ])}${
        (running || job.state === 'interrupted') && may(context.actor, 'bulk_replay_cancel')
          ? html`<form method="post" action="${path`/admin/bulk-replay/${job.id}/cancel`}">${csrfField(context)}<button type="submit" id="bulk-cancel">Cancel</button></form>`
          : ''
      }`,
    context,
    running ? 2 : undefined,
  );
}
