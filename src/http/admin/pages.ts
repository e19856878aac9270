import { may } from '../../admin/access.js';
import type { BulkReplayJob } from '../../admin/bulk-replays.js';
import type { AdminAction } from '../../admin/audit.js';
import type { EventListFilter, EventPage } from '../../admin/event-list.js';
import type { EventView } from '../../admin/event-view.js';
import type { ReconcileRun } from '../../ops/reconcile/runs.js';
import type { Overview } from '../../admin/overview.js';
import type { OutboxEntry } from '../../outbox/outbox-store.js';
import type { ReplayItem } from '../../ops/replay.js';
import { STUCK_KIND_LABELS, type StuckReport } from '../../ops/stuck.js';
import { capped, EVENT_ATTEMPT_ERROR_MAX } from '../../store/complete.js';
import { lineChart } from './charts.js';
import { html, path, table, type SafeHtml } from './html.js';
import type { PageContext } from './page-context.js';
import { ADMIN_ACTION_WORDS, DELIVERY_RESULT_WORDS, filterInWords, inWords, REPLAY_RESULT_WORDS } from './words.js';

export type { PageContext };

const RESULT_COLOURS: Record<string, string> = {
  accepted: '#16794c',
  duplicate: '#2456c9',
  invalid_signature: '#b42318',
  bad_request: '#c4640a',
  unavailable: '#7a2ec4',
  error: '#444444',
};

export function document(title: string, body: SafeHtml, context: PageContext | null, refreshSeconds?: number): string {
  const nav = context
    ? html`<header>
        <span class="brand">webhook-inbox</span>
        <nav>
          <a href="/admin">Overview</a><a href="/admin/events">Events</a><a href="/admin/payments">Payments</a><a href="/admin/problems">Failed &amp; stuck</a
          ><a href="/admin/outbox">Outbox</a><a href="/admin/rejections">Rejected</a><a href="/admin/reconcile">Reconcile</a><a href="/admin/audit">Audit</a>
        </nav>
        <span class="who"
          >${context.actor.name}
          (${context.actor.role})${context.actor.via === 'proxy' ? '' : html`<form class="inline" method="post" action="/admin/sign-out">${csrfField(context)}<button class="secondary" type="submit">Sign out</button></form>`}</span
        >
      </header>`
    : '';
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        ${refreshSeconds ? html`<meta http-equiv="refresh" content="${refreshSeconds}" />` : ''}
        <title>${title} · webhook-inbox admin</title>
        <link rel="stylesheet" href="/admin/assets/admin.css" />
        <script src="/admin/assets/admin.js" defer></script>
      </head>
      <body>
        ${nav}
        <main>${body}</main>
      </body>
    </html>`.text;
}

const csrfField = (context: PageContext) => html`<input type="hidden" name="_csrf" value="${context.csrf}" />`;
export const time = (value: string | Date | null | undefined) => (value ? (value instanceof Date ? value.toISOString() : value).replace('T', ' ').replace(/\.\d+Z$|Z$/, '') : '');
export const statusCell = (status: string) => html`<span class="status-${status}">${status}</span>`;

export function signInPage(error: string | null): string {
  return document(
    'Sign in',
    html`<div class="signin">
      <h1>Sign in</h1>
      ${error ? html`<p class="error">${error}</p>` : ''}
      <form method="post" action="/admin/sign-in">
        <label>Admin token (ADMIN_TOKENS)<input type="password" name="token" autocomplete="current-password" required autofocus /></label><button type="submit">Sign in</button>
      </form>
    </div>`,
    null,
  );
}

export function errorPage(context: PageContext | null, status: number, message: string): string {
  return document(
    `Error ${status}`,
    html`<h1>Error ${status}</h1>
      <p class="error">${message}</p>`,
    context,
  );
}

export function overviewPage(context: PageContext, overview: Overview): string {
  const labels = overview.buckets.map((b) => b.at.slice(11, 16));
  const results = [...new Set(overview.buckets.flatMap((b) => Object.keys(b.deliveries)))].sort();
  const perMinute = overview.bucketSeconds / 60;
  const deliveries = lineChart(
    `Deliveries per minute by result (last ${overview.period})`,
    'per minute',
    labels,
    (results.length > 0 ? results : ['accepted']).map((result) => ({
      name: inWords(DELIVERY_RESULT_WORDS, result),
      colour: RESULT_COLOURS[result] ?? '#888888',
      values: overview.buckets.map((b) => (b.deliveries[result] ?? 0) / perMinute),
    })),
  );
  const latency = lineChart(`Acknowledgement time (last ${overview.period})`, 'ms', labels, [
    { name: 'mean ms', colour: '#2456c9', values: overview.buckets.map((b) => b.ackMeanMs) },
    { name: 'max ms', colour: '#c4640a', values: overview.buckets.map((b) => b.ackMaxMs) },
  ]);
  const sampled = (pick: (sample: NonNullable<Overview['buckets'][number]['sample']>) => number | null) => overview.buckets.map((b) => (b.sample ? pick(b.sample) : null));
  const backlog = lineChart(`Backlog due and oldest pending (last ${overview.period})`, 'events, seconds', labels, [
    { name: 'due', colour: '#2456c9', values: sampled((s) => s.due) },
    { name: 'oldest pending s', colour: '#c4640a', values: sampled((s) => s.oldestPendingSeconds) },
  ]);
  const attention = lineChart(`Failed, stuck, outbox failed (last ${overview.period})`, 'count', labels, [
    { name: 'failed', colour: '#b42318', values: sampled((s) => s.failed) },
    { name: 'stuck', colour: '#7a2ec4', values: sampled((s) => s.stuck) },
    { name: 'outbox failed', colour: '#444444', values: sampled((s) => s.outboxFailed) },
  ]);
  const card = (label: string, value: string | number, bad = false) =>
    html`<div class="card">
      <div class="n ${bad ? 'bad' : ''}">${value}</div>
      <div class="l">${label}</div>
    </div>`;
  const other = overview.period === 'hour' ? 'day' : 'hour';
  return document(
    'Overview',
    html`<h1>Overview</h1>
      <p>Last ${overview.period} · <a href="/admin?period=${other}">show the last ${other}</a> · every process's deliveries, read from the database.</p>
      <div class="cards">
        ${card('backlog due now', overview.backlogDue, overview.backlogDue > 0)}${card('oldest pending', overview.oldestPendingAgeSeconds === null ? 'none' : `${overview.oldestPendingAgeSeconds} s`)}${card('failed events', overview.failed, overview.failed > 0)}${card('stuck (expired lease)', overview.stuck, overview.stuck > 0)}${card('outbox failed', overview.outbox.failed, overview.outbox.failed > 0)}${card('outbox pending', overview.outbox.pending)}
      </div>
      <h2>Traffic</h2>
      <div class="charts">${deliveries}${latency}</div>
      <h2>What needs attention</h2>
      <div class="charts">${backlog}${attention}</div>
      <h2>Recent rejected deliveries</h2>
      ${rejectionsTable(overview.recentRejections)}
      <p><a href="/admin/rejections">all recent rejections</a></p>`,
    context,
  );
}

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

export function option(value: string, selected: string | undefined, label = value): SafeHtml {
  return html`<option value="${value}" ${selected === value ? html`selected` : ''}>${label}</option>`;
}

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
        ${field('type', 'Type')}${field('paymentId', 'Payment id')}${field('eventId', 'Event id')}${field('from', 'Received from (UTC)')}${field('to', 'to')}${field('q', 'Payload contains (in the window)')}
        <button type="submit">Filter</button> <a href="/admin/events">clear</a>
      </form>
      ${eventsTable(page.events)}${next ? html`<p><a href="${next}">Older events →</a></p>` : ''}`,
    context,
  );
}

export function facts(entries: Array<[string, SafeHtml | string | number | null]>): SafeHtml {
  return html`<dl class="facts">
    ${entries.map(
      ([label, value]) =>
        html`<dt>${label}</dt>
          <dd>${value ?? ''}</dd>`,
    )}
  </dl>`;
}

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

function bulkJobsTable(jobs: BulkReplayJob[]): SafeHtml {
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
