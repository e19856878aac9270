import type { Overview } from '../../admin/overview.js';
import { lineChart } from './charts.js';
import { html } from './html.js';
import type { PageContext } from './page-context.js';
import { document } from './page-layout.js';
import { rejectionsTable } from './rejections-page.js';
import { DELIVERY_RESULT_WORDS, inWords } from './words.js';

const RESULT_COLOURS: Record<string, string> = {
  accepted: '#16794c',
  duplicate: '#2456c9',
  invalid_signature: '#b42318',
  bad_request: '#c4640a',
  unavailable: '#7a2ec4',
  error: '#444444',
};

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
