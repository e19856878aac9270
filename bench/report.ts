import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { BacklogRun } from './backlog.js';
import { CAPACITY_LIMITS } from './capacity.js';
import { latencyChart } from './chart.js';
import type { BenchResults, LagSummary } from './results.js';
import { round } from './stats.js';
import { inProcess } from './targets.js';

const cell = (value: number | null | undefined, unit = '') => (value === null || value === undefined ? '—' : `${value}${unit}`);
/** A lag summary as a table cell: "p50 / p99", or — when nothing was processed. */
const lagCell = (lag: LagSummary) => (lag ? `${cell(lag.p50)} / ${cell(lag.p99)}` : '—');

/** A run with `--rates none` has no fixed-rate steps: no latency section, no chart. */
const hasFixedRateSteps = (settings: BenchResults['settings']) => settings.rates.length > 0;

/** The fixed-rate steps' percentiles beside their chart. */
function latencySection({ settings, summary }: BenchResults): string[] {
  if (!hasFixedRateSteps(settings)) return [];
  return [
    '## Latency against offered load (open loop, measured from the moment each request was due)',
    '',
    '![latency percentiles against offered load](latency.svg)',
    '',
    `| target | ${settings.rates.map((r) => `${r}/s p50 / p99 / p99.9`).join(' | ')} |`,
    `|---|${settings.rates.map(() => '---').join('|')}|`,
    ...summary.targets.map((t) => `| ${t.label} | ${t.paced.map((p) => `${cell(p.p50)} / ${cell(p.p99)} / ${cell(p.p99_9)}`).join(' | ')} |`),
  ];
}

/** A run's results as report.md: the saturation table, then a section for each step the run made, then its targets. */
export function reportMarkdown(results: BenchResults): string {
  const { summary, machine, settings } = results;
  const lines = [
    '# webhook-inbox benchmark',
    '',
    `${results.startedAt} — \`${results.command}\` — ${settings.repeat} repetition(s), medians; saturation runs ${settings.durationSec} s with ${settings.connections} connections; fixed-rate steps ${settings.pacedDurationSec} s.`,
    '',
    `Machine: ${machine.cpu}, ${machine.memoryGb} GB, Linux ${machine.kernel}, Node ${machine.node}; ${machine.database}${machine.postgres ? `; ${machine.postgres}` : ''}. The load generator runs on the same cores. Load average ${machine.loadAverage}.`,
    ...(settings.dbLatencyMs > 0
      ? [
          '',
          `The targets reached MariaDB through a proxy that delayed every packet ${settings.dbLatencyMs} ms each way (a round trip ${2 * settings.dbLatencyMs} ms longer): a database across a network.`,
        ]
      : []),
    '',
    '## Saturation (closed loop)',
    '',
    '| target | acks/s | x baseline | ack p50 / p99 / p99.9 (ms) | non-2xx | service CPU per ack | database CPU per ack | processed/s | keep-up | lag p50 / p99 (ms) | all done after (s) | peak RSS |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...summary.targets.map(
      (t) =>
        `| ${t.label} | ${t.acksPerSec} | ${cell(t.ackRatio, 'x')} | ${cell(t.latencyMs.p50)} / ${cell(t.latencyMs.p99)} / ${cell(t.latencyMs.p99_9)} | ${t.non2xx} | ${cell(t.serviceCpuMsPerAck, ' ms')} | ${cell(t.databaseCpuMsPerAck, ' ms')} | ${cell(t.processedPerSec)} | ${cell(t.keepUp)} | ${lagCell(t.lagMs)} | ${cell(t.settledAfterSec)} | ${t.peakRssMb} MB |`,
    ),
    '',
    "acks/s counts every 2xx (new events and duplicates); processed/s counts distinct events processed during the run; keep-up is processed/s over distinct new events/s. All done after: seconds from the end of the load until every event was processed and every outbox effect dispatched (the work the run left behind). Service CPU per ack: CPU time of the service process during the run (acknowledging and, in background mode, processing) divided by its acks; database CPU per ack the same for the database server (MariaDB; for the PostgreSQL rows the backends connected to the target's database; — when it runs elsewhere, or for SQLite, which runs inside the service). x baseline: against the baseline on the same database server in the same repetition (PostgreSQL rows against the PostgreSQL baseline; SQLite against MariaDB). non-2xx counts every measured step.",
    '',
    ...sustainedSection(results),
    ...latencySection(results),
  ];
  const floods = summary.targets.filter((t) => t.flood);
  if (floods.length > 0) {
    lines.push(
      '',
      `## Forged flood (valid deliveries at ${settings.floodRate}/s for ${settings.pacedDurationSec} s, alone and then with forged ones at saturation from a second process)`,
      '',
      '| target | valid p99 alone (ms) | valid p50 / p99 during the flood (ms) | valid refused | forged/s | forged accepted |',
      '|---|---|---|---|---|---|',
      ...floods.map((t) => {
        const f = t.flood!;
        return `| ${t.label} | ${cell(f.quietP99Ms)} | ${cell(f.floodP50Ms)} / ${cell(f.floodP99Ms)} | ${f.validRefused} | ${f.forgedPerSec} | ${f.forgedAccepted} |`;
      }),
      '',
      'Forged deliveries are real ones with one byte added to the body: well-formed, full size, every signature wrong, so each costs the receiver a whole HMAC and nothing more (no database access before the signature is checked).',
    );
  }
  if (summary.growth.length > 0) {
    lines.push(
      '',
      '## Growth (same saturation load, table pre-filled)',
      '',
      'Each target runs on the empty table first, then on the same table filled to each size, so the ratios compare table sizes at one point of the run.',
      '',
      '| rows already in webhook_events | target | acks/s | x empty table | ack p99 (ms) |',
      '|---|---|---|---|---|',
    );
    for (const g of summary.growth) lines.push(`| ${g.rows.toLocaleString('en')} | ${g.target} | ${g.acksPerSec} | ${cell(g.ratioToEmpty, 'x')} | ${cell(g.latencyP99Ms)} |`);
  }
  lines.push(...capacitySection(results), ...backlogSection(results));
  lines.push('', '## Targets', '', '| target | met | measured |', '|---|---|---|');
  for (const c of summary.checks) lines.push(`| ${c.target} | ${c.met === null ? '—' : c.met ? 'yes' : 'no'} | ${c.measured} |`);
  lines.push('');
  return lines.join('\n');
}

function capacitySection(results: BenchResults): string[] {
  const { capacity } = results.summary;
  if (capacity.length === 0) return [];
  const steps = (name: string) =>
    results.capacity
      .filter((c) => c.target === name)
      .map((c) =>
        c.trials
          .map(
            (t) =>
              `${t.rate}${t.passed ? '' : '✗'} (${t.tries > 1 ? `${t.triesPassed}/${t.tries} passed, medians: ` : ''}p99 ${cell(t.ackP99Ms)}, keep-up ${cell(t.keepUp)}, lag p99 ${cell(t.lagP99Ms)}${t.workersYieldSec ? `, workers yielded ${t.workersYieldSec} s` : ''})`,
          )
          .join(', '),
      )
      .join('; ');
  return [
    '',
    `## End-to-end capacity (fixed-rate steps of ${results.settings.capacityDurationSec} s: ack p99 <= ${CAPACITY_LIMITS.ackP99Ms} ms, keep-up >= ${CAPACITY_LIMITS.keepUp}, lag p99 < ${CAPACITY_LIMITS.lagP99Ms} ms, every delivery a 2xx)`,
    '',
    '| target | capacity (deliveries/s offered) | x naive handler | steps, per repetition (✗ failed) |',
    '|---|---|---|---|',
    ...capacity.map((c) => `| ${c.label} | ${c.capacity} | ${cell(c.ratioToNaive, 'x')} | ${steps(c.target)} |`),
    '',
    `From ${results.settings.capacityStart}/s, doubled until a rate fails, then ${results.settings.capacityRefine} rate(s) halving the gap; each rate tried up to ${results.settings.capacityTries} time(s), passing when most tries pass; the targets' searches take turns step by step, so each meets the same minutes of the host; capacity is the highest rate that passed (median over repetitions).`,
  ];
}

/** Statement shapes listed in the report; results.json keeps them all. */
const STATEMENT_ROWS = 25;

const perEventSum = (statements: BacklogRun['statements'], value: (s: BacklogRun['statements'][number]) => number) =>
  round(
    statements.reduce((sum, s) => sum + value(s), 0),
    3,
  );

function backlogSection(results: BenchResults): string[] {
  return results.summary.backlog.flatMap((b) => {
    const database = { mysql: 'MariaDB', postgres: 'PostgreSQL', sqlite: 'SQLite' }[b.store];
    const counters = Object.entries(b.perEvent).filter(([name]) => name !== 'Questions');
    const source = {
      postgres:
        "Per event, from PostgreSQL's pg_stat_database for the bench's database (statements from pg_stat_statements when installed, otherwise the worker's own from the statement probe)",
      mysql: "Per event, from MariaDB's SHOW GLOBAL STATUS over the drain (server-wide: other clients of the server count too)",
      sqlite: 'SQLite runs inside the worker: its CPU is in the worker CPU, the ratio is to MariaDB’s baseline, and there are no server counters',
    }[b.store];
    const withinWorker = inProcess(b.store);
    return [
      '',
      `## Backlog on ${database}: processing alone (${b.events} events recorded with \`serve --no-workers\`, then one \`worker\` alone)`,
      '',
      `| events/s | worker CPU per event | ${database} CPU per event | x baseline CPU per ack | statements | row writes | row reads | commits |`,
      '|---|---|---|---|---|---|---|---|',
      `| ${cell(b.eventsPerSec)} | ${cell(b.serviceCpuMsPerEvent, ' ms')} | ${withinWorker ? 'in the worker' : cell(b.databaseCpuMsPerEvent, ' ms')} | ${cell(b.cpuRatioToBaselineAck, 'x')} | ${cell(b.statementsPerEvent)} | ${cell(b.rowWritesPerEvent)} | ${cell(b.rowReadsPerEvent)} | ${cell(b.commitsPerEvent)} |`,
      '',
      `${source}${counters.length === 0 ? '' : `: ${counters.map(([name, value]) => `${name} ${value}`).join(', ')}`}.`,
      '',
      `The worker's statements by shape (bench/statement-probe.mjs; the bench's own drain polls are not among them), per processed event: ${STATEMENT_ROWS} most frequent of ${b.statements.length} shapes, ${perEventSum(b.statements, (s) => s.perEvent)} statements per event in all, ${perEventSum(b.statements, (s) => s.unpreparedPerEvent)} of them unprepared (parsed and planned for that run alone). Texts: how many distinct statement texts the shape came in.`,
      '',
      `| statement | per event | unprepared per event | texts | rows changed per event | ${withinWorker ? 'execution' : 'round-trip'} ms per event | errors |`,
      '|---|---|---|---|---|---|---|',
      ...b.statements
        .slice(0, STATEMENT_ROWS)
        .map(
          (s) =>
            `| \`${s.shape.replaceAll('|', '\\|').replaceAll('`', "'")}\` | ${s.perEvent} | ${s.unpreparedPerEvent} | ${s.texts} | ${s.rowsChangedPerEvent} | ${s.msPerEvent} | ${s.errors} |`,
        ),
    ];
  });
}

function sustainedSection(results: BenchResults): string[] {
  const rows = results.summary.targets.filter((t) => t.sustained);
  if (rows.length === 0) return [];
  return [
    `## Sustained load (${results.settings.sustainedRate}/s offered for ${results.settings.durationSec} s, open loop)`,
    '',
    "| target | acks/s | ack p99 (ms) | processed/s | keep-up | lag p50 / p99 (ms) | lag p50 / p99 of a payment's 1st; 2nd; 3rd+ event (ms) | all done after (s) |",
    '|---|---|---|---|---|---|---|---|',
    ...rows.map((t) => {
      const s = t.sustained!;
      return `| ${t.label} | ${s.acksPerSec} | ${cell(s.ackP99Ms)} | ${cell(s.processedPerSec)} | ${cell(s.keepUp)} | ${lagCell(s.lagMs)} | ${s.lagMs ? s.lagByPaymentRankMs.map(lagCell).join('; ') : '—'} | ${cell(s.settledAfterSec)} |`;
    }),
    '',
    "One event of a payment is processed at a time, so a payment's later events wait for its earlier ones: their lag is the first event's and then some.",
    '',
  ];
}

/** results.json, report.md and, when the run had fixed-rate steps, latency.svg. */
export function writeReport(directory: string, results: BenchResults): void {
  mkdirSync(directory, { recursive: true });
  writeFileSync(join(directory, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(directory, 'report.md'), reportMarkdown(results));
  const chart = join(directory, 'latency.svg');
  // A chart left from an earlier run would sit beside a report that has no fixed-rate steps.
  if (!hasFixedRateSteps(results.settings)) {
    rmSync(chart, { force: true });
    return;
  }
  const series = results.summary.targets.map((t) => ({ label: t.label, points: t.paced }));
  writeFileSync(chart, latencyChart(series, `Ack latency against offered load (${results.machine.cpu})`));
}
