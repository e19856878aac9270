import type { ReconcileRun } from '../../ops/reconcile/runs.js';
import { capped, EVENT_ATTEMPT_ERROR_MAX } from '../../store/complete.js';
import { html, table } from './html.js';
import type { PageContext } from './page-context.js';
import { document } from './page-layout.js';
import { option, statusCell, time } from './page-parts.js';

export function reconcilePage(context: PageContext, runs: ReconcileRun[], provider: string | undefined, next: string | null): string {
  return document(
    'Reconcile runs',
    html`<h1>Reconcile runs</h1>
      <p>
        Each run asked a provider's API what happened in its window and recorded what never arrived (the same list as <span class="mono">webhook-inbox reconcile --history</span>).
      </p>
      <form class="filters" method="get" action="/admin/reconcile">
        <label
          >Provider<select name="provider">
            ${option('', provider, 'any')}${['stripe', 'razorpay', 'payu'].map((p) => option(p, provider))}
          </select></label
        ><button type="submit">Show</button>
      </form>
      ${table(
        [
          ['Started', (r) => time(r.startedAt)],
          ['Provider', (r) => r.provider],
          ['Window from', (r) => time(r.windowStart)],
          ['Window to', (r) => time(r.windowEnd)],
          ['Status', (r) => statusCell(r.status)],
          ['Found', (r) => r.found],
          ['Recorded', (r) => r.recorded],
          ['Errors', (r) => r.errors],
          ['Finished', (r) => time(r.finishedAt)],
          ['Last error', (r) => (r.lastError === null ? '' : capped(r.lastError, EVENT_ATTEMPT_ERROR_MAX)), 'mono'],
        ],
        runs,
        { empty: 'No reconcile runs yet.', className: 'reconcile-runs' },
      )}${next ? html`<p><a href="${next}">Older runs →</a></p>` : ''}`,
    context,
  );
}
