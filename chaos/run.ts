import { waitFor } from '../test/support/harness.js';
import { countEvents, processingLag } from '../test/support/load.js';
import type { Unavailable } from '../test/support/services.js';
import { ChaosCluster, type ClusterOptions } from './cluster.js';
import { FaultInjector, isProcessKill, type FaultKind, type FaultRecord, type InjectorOptions } from './faults.js';
import { checkInvariants, type InvariantResult } from './invariants.js';
import { simulatedPayment } from './lifecycles.js';
import { Random } from './random.js';
import { isAcknowledged, ProviderSimulator, type DeliveryRecord, type SimulatorOptions } from './simulator.js';

export interface ChaosOptions {
  seed: number;
  payments: number;
  cluster: ClusterOptions;
  simulator: Omit<SimulatorOptions, 'receivers' | 'random'>;
  faults: InjectorOptions;
  /** A 503 this long after a database fault ended is still part of the outage. */
  outageGraceMs: number;
  /** After the last delivery: longest wait for every event to be processed. */
  drainTimeoutMs: number;
}

export interface FaultSummary extends Omit<FaultRecord, 'startedAt' | 'endedAt' | 'databaseDown'> {
  /** Seconds since the start of the run. */
  at: number;
  durationMs: number;
  /** Fault end -> first 2xx (from the restarted receiver, for a receiver kill). */
  firstAckMs: number | null;
}

export interface ChaosReport {
  seed: number;
  startedAt: string;
  durationSeconds: number;
  options: ChaosOptions;
  events: { sent: number; payments: number; byProvider: Record<string, number>; byType: Record<string, number> };
  deliveries: {
    total: number;
    acknowledged: number;
    /** Deliveries answered "duplicate": concurrent bursts, redeliveries after a 2xx, retries of a 503 that had committed. */
    answeredDuplicate: number;
    burstCopies: number;
    retries: number;
    redeliveries: number;
    byStatus: Record<string, number>;
  };
  faults: { total: number; kills: number; byKind: Partial<Record<FaultKind, number>>; list: FaultSummary[] };
  recovery: Partial<Record<FaultKind, { firstAckMs: Stats | null; drainedMs: Stats | null }>>;
  takeovers: { eventsWithSeveralAttempts: number; maxAttempts: number; fencedCommits: number };
  /** Processed events by the kind of process whose attempt succeeded (`worker`, `receiver thread`). */
  processedBy: Record<string, number>;
  /** Received (row committed) -> processed (business transaction committed), over all events. */
  processingLagMs: { median: number; p99: number; max: number };
  invariants: InvariantResult[];
  unexpectedExits: string[];
  startFailures: string[];
  passed: boolean;
}

export interface Stats {
  median: number;
  max: number;
}

/** Starts a private cluster, delivers like the providers while breaking it, then checks the invariants. */
export async function runChaos(options: ChaosOptions, log: (line: string) => void = () => undefined): Promise<ChaosReport | Unavailable> {
  const cluster = await ChaosCluster.start(options.cluster);
  if ('skip' in cluster) return cluster;
  try {
    const random = new Random(options.seed);
    const run = `c${options.seed.toString(36)}`;
    const payments = Array.from({ length: options.payments }, (_, n) => simulatedPayment(random, run, n));
    const simulator = new ProviderSimulator(payments, { ...options.simulator, receivers: cluster.receiverUrls, random });
    const injector = new FaultInjector(cluster, simulator, random, options.faults);
    const startedAt = Date.now();
    log(
      `${simulator.events.length} events of ${payments.length} payments, ${options.cluster.receivers} receivers (${options.cluster.processingReceivers} with their workers' thread), ${options.cluster.workers} workers`,
    );

    const progress = setInterval(
      () =>
        log(
          `${Math.round((Date.now() - startedAt) / 1000)} s: ${simulator.progress} sent, ${simulator.acknowledged} acknowledged, ${simulator.deliveries.length} deliveries, ${injector.faults.length} faults (${injector.kills} kills)`,
        ),
      15_000,
    );
    try {
      const delivering = simulator.run();
      await injector.run(() => simulator.progress >= simulator.events.length);
      await delivering;
      log('every event acknowledged; waiting for processing to finish');
      await waitFor('every event processed', async () => (await countEvents(cluster.db, 'processed')) >= simulator.events.length, options.drainTimeoutMs).catch((error: Error) =>
        log(error.message),
      );
      await injector.drained();
    } finally {
      clearInterval(progress);
    }

    const invariants = await checkInvariants(cluster.db, simulator, injector.faults, options.outageGraceMs);
    const events = cluster.db.selectFrom('webhook_events');
    const several = await events
      .select((eb) => eb.fn.countAll().as('n'))
      .where('attempts', '>', 1)
      .executeTakeFirstOrThrow();
    const most = await events.select((eb) => eb.fn.max('attempts').as('n')).executeTakeFirstOrThrow();
    const takeovers = { eventsWithSeveralAttempts: Number(several.n), maxAttempts: Number(most.n), fencedCommits: cluster.leaseLost };
    const owners = await events
      .select(['lease_owner', (eb) => eb.fn.countAll().as('n')])
      .where('status', '=', 'processed')
      .groupBy('lease_owner')
      .execute();
    const processedBy: Record<string, number> = {};
    for (const { lease_owner, n } of owners) {
      const kind = (lease_owner && cluster.processOwning(lease_owner)?.kind) ?? 'unknown';
      processedBy[kind] = (processedBy[kind] ?? 0) + Number(n);
    }
    const unexpectedExits = cluster.unexpectedExits();
    const lag = await processingLag(cluster.db, '');
    return {
      seed: options.seed,
      startedAt: new Date(startedAt).toISOString(),
      durationSeconds: Math.round((Date.now() - startedAt) / 1000),
      options,
      events: {
        sent: simulator.events.length,
        payments: payments.length,
        byProvider: tally(simulator.events.map((e) => e.provider)),
        byType: tally(simulator.events.map((e) => `${e.provider} ${e.type}`)),
      },
      deliveries: {
        total: simulator.deliveries.length,
        acknowledged: simulator.deliveries.filter(isAcknowledged).length,
        answeredDuplicate: simulator.deliveries.filter((d) => d.outcome === 'duplicate').length,
        burstCopies: simulator.deliveries.filter((d) => d.kind === 'burst').length,
        retries: simulator.deliveries.filter((d) => d.kind === 'retry').length,
        redeliveries: simulator.deliveries.filter((d) => d.kind === 'redelivery').length,
        byStatus: tally(simulator.deliveries.map((d) => (d.status === 0 ? 'no answer' : String(d.status)))),
      },
      faults: summariseFaults(injector.faults, simulator.deliveries, startedAt),
      recovery: recoveryByKind(injector.faults.map((f) => summarise(f, simulator.deliveries, startedAt))),
      takeovers,
      processedBy,
      processingLagMs: { median: lag.median, p99: lag.p99, max: lag.max },
      invariants,
      unexpectedExits,
      startFailures: cluster.startFailures,
      passed: invariants.every((i) => i.violations === 0) && unexpectedExits.length === 0 && cluster.startFailures.length === 0,
    };
  } finally {
    await cluster.stop();
  }
}

function tally(values: string[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

function summariseFaults(faults: FaultRecord[], deliveries: DeliveryRecord[], startedAt: number): ChaosReport['faults'] {
  return {
    total: faults.length,
    kills: faults.filter((f) => isProcessKill(f.kind)).length,
    byKind: tally(faults.map((f) => f.kind)),
    list: faults.map((f) => summarise(f, deliveries, startedAt)),
  };
}

function summarise(fault: FaultRecord, deliveries: DeliveryRecord[], startedAt: number): FaultSummary & { kind: FaultKind } {
  const { startedAt: began, endedAt, databaseDown: _, ...rest } = fault;
  const receiver = fault.kind === 'receiver-kill' ? Number(fault.target.split(' ')[1]) : null;
  const firstAck = deliveries
    .filter((d) => isAcknowledged(d) && d.startedAt >= endedAt && (receiver === null || d.receiver === receiver))
    .reduce((earliest, d) => Math.min(earliest, d.endedAt), Infinity);
  return { ...rest, at: Math.round((began - startedAt) / 100) / 10, durationMs: endedAt - began, firstAckMs: Number.isFinite(firstAck) ? firstAck - endedAt : null };
}

function recoveryByKind(faults: Array<FaultSummary & { kind: FaultKind }>): ChaosReport['recovery'] {
  const recovery: ChaosReport['recovery'] = {};
  for (const kind of new Set(faults.map((f) => f.kind))) {
    const ofKind = faults.filter((f) => f.kind === kind);
    recovery[kind] = {
      firstAckMs: stats(ofKind.map((f) => f.firstAckMs)),
      drainedMs: stats(ofKind.map((f) => f.drainedMs ?? null)),
    };
  }
  return recovery;
}

function stats(values: Array<number | null>): Stats | null {
  const known = values.filter((v): v is number => v !== null).sort((a, b) => a - b);
  if (known.length === 0) return null;
  return { median: known[Math.floor(known.length / 2)]!, max: known.at(-1)! };
}
