import type { BacklogRun } from './backlog.js';
import { checks } from './checks.js';
import type { ProcessingStats } from './database.js';
import type { BacklogSummary, CapacityRun, ForgedFlood, GrowthRun, LagSummary, Step, Summary, TargetRun, TargetSummary } from './results.js';
import type { BenchSettings } from './settings.js';
import { median, round, type Percentiles } from './stats.js';
import { inProcess, peerOf, peerOn, TARGETS } from './targets.js';

const nullableMedian = (values: Array<number | null | undefined>) => {
  const present = values.filter((v): v is number => typeof v === 'number');
  return present.length === 0 ? null : round(median(present));
};

const processingOf = (steps: Step[]) => steps.map((s) => s.processing).filter((p): p is ProcessingStats => p !== null);
const lagOf = (lags: Percentiles[]): LagSummary => (lags.length === 0 ? null : { p50: nullableMedian(lags.map((l) => l.p50)), p99: nullableMedian(lags.map((l) => l.p99)) });
const settledOf = (processing: ProcessingStats[]) => nullableMedian(processing.map((p) => (p.settledAfterMs === null ? null : p.settledAfterMs / 1000)));

/** A run's medians over repetitions, its ratios to the baseline and the naive handler of the same server, and its checks. */
export function summarise(settings: BenchSettings, runs: TargetRun[], growth: GrowthRun[], backlog: BacklogRun[], capacity: CapacityRun[]): Summary {
  const targets = settings.targets.map((name): TargetSummary => {
    const own = runs.filter((r) => r.target === name);
    const saturations = own.map((r) => r.saturation);
    const baselineName = peerOf(name, 'baseline');
    const ackRatios =
      name === baselineName
        ? []
        : own.flatMap((r) => {
            const baseline = runs.find((b) => b.target === baselineName && b.repetition === r.repetition);
            return baseline ? [round(r.saturation.load.acksPerSec / baseline.saturation.load.acksPerSec, 3)] : [];
          });
    const processing = processingOf(saturations);
    const sustainedSteps = own.map((r) => r.sustained).filter((s): s is Step => s !== null);
    const sustainedProcessing = processingOf(sustainedSteps);
    const floods = own.map((r) => r.flood).filter((f): f is ForgedFlood => f !== null);
    return {
      target: name,
      label: TARGETS[name]!.label,
      acksPerSec: round(median(saturations.map((s) => s.load.acksPerSec)), 0),
      ackRatio: ackRatios.length > 0 ? round(median(ackRatios), 3) : null,
      ackRatios,
      latencyMs: {
        p50: nullableMedian(saturations.map((s) => s.load.latencyMs.p50)),
        p99: nullableMedian(saturations.map((s) => s.load.latencyMs.p99)),
        p99_9: nullableMedian(saturations.map((s) => s.load.latencyMs.p99_9)),
      },
      non2xx: own.flatMap((r) => [...r.paced, ...(r.sustained ? [r.sustained] : []), r.saturation]).reduce((sum, s) => sum + s.load.non2xx + s.load.errors, 0),
      serviceCpuMsPerAck: nullableMedian(saturations.map((s) => s.serviceCpuMsPerAck)),
      databaseCpuMsPerAck: nullableMedian(saturations.map((s) => s.databaseCpuMsPerAck)),
      processedPerSec: nullableMedian(processing.map((p) => p.processedPerSec)),
      keepUp: nullableMedian(processing.map((p) => p.keepUp)),
      lagMs: lagOf(processing.map((p) => p.lagMs)),
      settledAfterSec: settledOf(processing),
      sustained:
        settings.sustainedRate === null || sustainedSteps.length === 0
          ? null
          : {
              rate: settings.sustainedRate,
              acksPerSec: round(median(sustainedSteps.map((s) => s.load.acksPerSec)), 0),
              ackP99Ms: nullableMedian(sustainedSteps.map((s) => s.load.latencyMs.p99)),
              processedPerSec: nullableMedian(sustainedProcessing.map((p) => p.processedPerSec)),
              keepUp: nullableMedian(sustainedProcessing.map((p) => p.keepUp)),
              lagMs: lagOf(sustainedProcessing.map((p) => p.lagMs)),
              lagByPaymentRankMs: [0, 1, 2].map((rank) => lagOf(sustainedProcessing.map((p) => p.lagByPaymentRankMs[rank]!))),
              settledAfterSec: settledOf(sustainedProcessing),
            },
      peakRssMb: Math.max(...own.map((r) => r.peakRssMb)),
      paced: settings.rates.map((rate, index) => {
        const steps = own.map((r) => r.paced[index]!.load);
        return {
          rate,
          acksPerSec: round(median(steps.map((s) => s.acksPerSec)), 0),
          p50: nullableMedian(steps.map((s) => s.latencyMs.p50)),
          p99: nullableMedian(steps.map((s) => s.latencyMs.p99)),
          p99_9: nullableMedian(steps.map((s) => s.latencyMs.p99_9)),
        };
      }),
      flood:
        settings.floodRate === null || floods.length === 0
          ? null
          : {
              rate: settings.floodRate,
              quietP99Ms: nullableMedian(floods.map((f) => f.quiet.latencyMs.p99)),
              floodP50Ms: nullableMedian(floods.map((f) => f.valid.latencyMs.p50)),
              floodP99Ms: nullableMedian(floods.map((f) => f.valid.latencyMs.p99)),
              validRefused: floods.reduce((sum, f) => sum + f.valid.non2xx + f.valid.errors, 0),
              forgedPerSec: round(median(floods.map((f) => f.forged.requests / ((f.forged.finishedAt - f.forged.startedAt) / 1000))), 0),
              forgedAccepted: floods.reduce((sum, f) => sum + f.forged.acks, 0),
            },
    };
  });
  const growthSummary = growth.map((g) => {
    const empty = growth.find((e) => e.rows === 0 && e.target === g.target)?.step.load.acksPerSec;
    return {
      rows: g.rows,
      target: g.target,
      acksPerSec: round(g.step.load.acksPerSec, 0),
      ratioToEmpty: empty ? round(g.step.load.acksPerSec / empty, 3) : null,
      latencyP99Ms: g.step.load.latencyMs.p99,
    };
  });
  const backlogSummary = [...new Set(backlog.map((b) => b.store))].map((store) =>
    summariseBacklog(
      backlog.filter((b) => b.store === store),
      targets.find((t) => t.target === peerOn(store, 'baseline')),
    ),
  );
  const capacitySummary = settings.capacityTargets.map((name) => {
    const own = capacity.filter((c) => c.target === name);
    const naiveName = peerOf(name, 'naive');
    // Per repetition, against the capacity of the naive handler on the same server in the same repetition.
    const ratios = own.flatMap((c) => {
      const peer = capacity.find((n) => n.target === naiveName && n.repetition === c.repetition);
      return peer && peer.capacity > 0 ? [c.capacity / peer.capacity] : [];
    });
    return {
      target: name,
      label: TARGETS[name]!.label,
      capacity: own.length === 0 ? 0 : round(median(own.map((c) => c.capacity)), 0),
      capacities: own.map((c) => c.capacity),
      ratioToNaive: name === naiveName || ratios.length === 0 ? null : round(median(ratios), 3),
    };
  });
  return {
    targets,
    growth: growthSummary,
    backlog: backlogSummary,
    capacity: capacitySummary,
    checks: checks(settings, targets, growthSummary, backlogSummary, capacitySummary),
  };
}

function summariseBacklog(backlog: BacklogRun[], baseline: TargetSummary | undefined): BacklogSummary {
  const of = (pick: (run: BacklogRun) => number | null) => nullableMedian(backlog.map(pick));
  const serviceCpuMsPerEvent = of((b) => b.serviceCpuMsPerEvent);
  const databaseCpuMsPerEvent = of((b) => b.databaseCpuMsPerEvent);
  const baselineService = baseline?.serviceCpuMsPerAck ?? null;
  const baselineDatabase = baseline?.databaseCpuMsPerAck ?? null;
  const perAck = baselineService !== null && baselineDatabase !== null ? baselineService + baselineDatabase : null;
  const perEvent = serviceCpuMsPerEvent !== null && (databaseCpuMsPerEvent !== null || inProcess(backlog[0]!.store)) ? serviceCpuMsPerEvent + (databaseCpuMsPerEvent ?? 0) : null;
  const counters = [...new Set(backlog.flatMap((b) => Object.keys(b.perEvent)))].sort();
  return {
    store: backlog[0]!.store,
    events: round(median(backlog.map((b) => b.events)), 0),
    eventsPerSec: of((b) => b.eventsPerSec),
    serviceCpuMsPerEvent,
    databaseCpuMsPerEvent,
    cpuRatioToBaselineAck: perAck && perEvent !== null ? round(perEvent / perAck, 2) : null,
    statementsPerEvent: of((b) => b.statementsPerEvent),
    rowWritesPerEvent: of((b) => b.rowWritesPerEvent),
    rowReadsPerEvent: of((b) => b.rowReadsPerEvent),
    commitsPerEvent: of((b) => b.commitsPerEvent),
    perEvent: Object.fromEntries(counters.map((name) => [name, round(median(backlog.map((b) => b.perEvent[name] ?? 0)))])),
    statements: backlog[0]!.statements,
  };
}
