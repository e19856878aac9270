import { STORE_NAMES } from '../test/support/services.js';
import type { ChaosReport, Stats } from './run.js';

const ms = (value: number | null | undefined) => (value === null || value === undefined ? '—' : `${(value / 1000).toFixed(1)} s`);
const range = (stats: Stats | null) => (stats ? `${ms(stats.median)} / ${ms(stats.max)}` : '—');

/** The report as committed in chaos/results/chaos-report.md (MariaDB) and chaos-report-postgres.md. */
export function toMarkdown(report: ChaosReport): string {
  const { events, deliveries, faults, takeovers } = report;
  const lines = [
    `# Chaos run ${report.startedAt}`,
    '',
    `**${report.passed ? 'PASSED' : 'FAILED'}**: ${events.sent} events of ${events.payments} payments, ${deliveries.total} deliveries, ` +
      `${faults.total} faults (${faults.kills} process kills), ${report.durationSeconds} s, seed ${report.seed}. ` +
      `${report.options.cluster.receivers} receivers (${report.options.cluster.processingReceivers} with their workers' thread) + ${report.options.cluster.workers} workers, private ${STORE_NAMES[report.options.cluster.store]} and Redis, lease ${report.options.cluster.leaseSeconds} s.`,
    '',
    '## Invariants',
    '',
    '| Invariant | Checked | Violations |',
    '|---|---:|---:|',
    ...report.invariants.map((i) => `| ${i.name}: ${i.description} | ${i.checked} | ${i.violations} |`),
    ...report.invariants.flatMap((i) => i.examples.map((example) => `- ${i.name}: ${example}`)),
    ...(report.unexpectedExits.length > 0 ? ['', `Processes that exited on their own: ${report.unexpectedExits.length}`] : []),
    ...(report.startFailures.length > 0
      ? ['', 'Restarts that failed (then tried again):', '', ...report.startFailures.map((f) => `    ${f.split('\n').slice(0, 12).join('\n    ')}`)]
      : []),
    '',
    '## Deliveries',
    '',
    `- ${deliveries.acknowledged} acknowledged (2xx), ${deliveries.answeredDuplicate} answered as duplicates`,
    `- ${deliveries.burstCopies} in concurrent bursts, ${deliveries.retries} retries after a failed attempt, ${deliveries.redeliveries} redeliveries after a 2xx`,
    `- by status: ${Object.entries(deliveries.byStatus)
      .map(([status, n]) => `${status}: ${n}`)
      .join(', ')}`,
    `- events by provider: ${Object.entries(events.byProvider)
      .map(([provider, n]) => `${provider} ${n}`)
      .join(', ')}`,
    `- received -> processed: median ${ms(report.processingLagMs.median)}, p99 ${ms(report.processingLagMs.p99)}, max ${ms(report.processingLagMs.max)}`,
    `- takeovers: ${takeovers.eventsWithSeveralAttempts} events needed more than one attempt (max ${takeovers.maxAttempts}); ${takeovers.fencedCommits} late commits refused by fencing`,
    `- processed by: ${Object.entries(report.processedBy)
      .map(([kind, n]) => `${kind} ${n}`)
      .join(', ')}`,
    '',
    '## Recovery per fault kind (median / max)',
    '',
    '| Fault | Count | Fault end -> first 2xx | Fault end -> backlog processed |',
    '|---|---:|---:|---:|',
    ...Object.entries(report.recovery).map(
      ([kind, r]) => `| ${kind} | ${faults.byKind[kind as keyof typeof faults.byKind] ?? 0} | ${range(r.firstAckMs)} | ${range(r.drainedMs)} |`,
    ),
    '',
    '## Faults',
    '',
    '| At | Fault | Target | Lasted | First 2xx after | Backlog processed after | Note |',
    '|---:|---|---|---:|---:|---:|---|',
    ...faults.list.map(
      (f) =>
        `| ${f.at.toFixed(1)} s | ${f.kind} | ${f.target} | ${ms(f.durationMs)} | ${ms(f.firstAckMs)} | ${ms(f.drainedMs)} | ${[f.note, f.fencedCommits !== undefined ? `${f.fencedCommits} commits refused by fencing` : ''].filter(Boolean).join('; ')} |`,
    ),
    '',
  ];
  return lines.join('\n');
}
