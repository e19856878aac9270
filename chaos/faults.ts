import { setTimeout as sleep } from 'node:timers/promises';
import { holdPayment } from '../test/support/load.js';
import { STORE_NAMES } from '../test/support/services.js';
import type { ChaosCluster, ProcessingProcess } from './cluster.js';
import type { Random } from './random.js';
import type { ProviderSimulator } from './simulator.js';

export const FAULT_KINDS = ['receiver-kill', 'worker-kill', 'database-kill', 'database-pause', 'redis-flush', 'redis-restart', 'worker-stall'] as const;
export type FaultKind = (typeof FAULT_KINDS)[number];

/** Receiver and worker kills: the "kills" of the report (a database server kill is counted as a database fault). */
export function isProcessKill(kind: FaultKind): boolean {
  return kind === 'receiver-kill' || kind === 'worker-kill';
}

export interface FaultRecord {
  kind: FaultKind;
  target: string;
  /** Epoch ms: the fault began (kill, stop, flush). */
  startedAt: number;
  /** Epoch ms: the fault was over (process restarted, server answering, resumed). */
  endedAt: number;
  /** Deliveries may get 503 during [startedAt, endedAt + grace]. */
  databaseDown: boolean;
  /** Fault end -> every event recorded before the end is processed (ms), null if it never was. */
  drainedMs?: number | null;
  /** worker-stall: commits refused by fencing in the cluster while the worker was frozen and after. */
  fencedCommits?: number;
  note?: string;
}

export interface InjectorOptions {
  /** Pause between two faults, after the previous fault's backlog was processed (or maxWaitMs passed). */
  gapMs: [number, number];
  maxWaitMs: number;
  /** How long a killed process stays dead before its restart. */
  downMs: [number, number];
  /** Share of receiver and worker kills among the faults after the first round of every kind. */
  killShare: number;
}

/**
 * Breaks the cluster while the simulator delivers: one fault at a time, every kind once first (in a
 * random order), then mostly process kills. Each fault is recorded with its window and, in the
 * background, how long the backlog it left took to drain.
 */
export class FaultInjector {
  readonly faults: FaultRecord[] = [];
  private readonly drains: Array<Promise<void>> = [];

  constructor(
    private readonly cluster: ChaosCluster,
    private readonly simulator: ProviderSimulator,
    private readonly random: Random,
    private readonly options: InjectorOptions,
  ) {}

  get kills(): number {
    return this.faults.filter((f) => isProcessKill(f.kind)).length;
  }

  /**
   * Injects faults until `done()` (and every kind once), then waits for the drain measurements. The
   * stall goes first (it needs payments still to come), then the server faults, then the kills (whose
   * restarts take long on a busy machine). The next fault waits for the backlog of the previous one,
   * so that each recovery time is measured on its own.
   */
  async run(done: () => boolean): Promise<void> {
    const servers = FAULT_KINDS.filter((kind) => kind !== 'worker-stall' && !isProcessKill(kind));
    const firstRound: FaultKind[] = ['worker-stall', ...this.random.shuffle(servers), ...this.random.shuffle(FAULT_KINDS.filter(isProcessKill))];
    while (firstRound.length > 0 || !done()) {
      await sleep(this.random.between(...this.options.gapMs));
      if (firstRound.length === 0 && done()) break;
      const fault = await this.inject(firstRound.shift() ?? this.nextKind());
      this.faults.push(fault);
      const drained = this.measureDrain(fault);
      this.drains.push(drained);
      await Promise.race([drained, sleep(this.options.maxWaitMs)]);
    }
  }

  async drained(): Promise<void> {
    await Promise.all(this.drains);
  }

  private nextKind(): FaultKind {
    if (this.random.chance(this.options.killShare)) return this.random.pick(['receiver-kill', 'worker-kill'] as const);
    return this.random.pick(FAULT_KINDS.filter((kind) => !isProcessKill(kind)));
  }

  private async inject(kind: FaultKind): Promise<FaultRecord> {
    const { cluster, random } = this;
    const lease = cluster.options.leaseSeconds * 1000;
    const startedAt = Date.now();
    const record = (target: string, databaseDown = false, extra: Partial<FaultRecord> = {}): FaultRecord => ({
      kind,
      target,
      startedAt,
      endedAt: Date.now(),
      databaseDown,
      ...extra,
    });
    switch (kind) {
      case 'receiver-kill': {
        const i = random.between(0, cluster.receiverUrls.length - 1);
        await cluster.killReceiver(i);
        await sleep(random.between(...this.options.downMs));
        return record(`receiver ${i}`, false, { note: await timed('restart', () => cluster.restartReceiver(i)) });
      }
      case 'worker-kill': {
        const i = random.between(0, cluster.options.workers - 1);
        await cluster.killWorker(i);
        await sleep(random.between(...this.options.downMs));
        return record(`worker ${i}`, false, { note: await timed('restart', () => cluster.restartWorker(i)) });
      }
      case 'database-kill':
        await cluster.database.kill();
        await sleep(random.between(...this.options.downMs));
        return record(STORE_NAMES[cluster.options.store], true, { note: await timed('restart with crash recovery', () => cluster.database.startServer()) });
      case 'database-pause':
        cluster.database.pause();
        await sleep(lease + 1000);
        cluster.database.resume();
        return record(STORE_NAMES[cluster.options.store], true, { note: `SIGSTOP for ${lease + 1000} ms (lease ${lease} ms)` });
      case 'redis-flush':
        await cluster.redis.flushAll();
        return record('redis');
      case 'redis-restart':
        await cluster.redis.restart();
        return record('redis');
      case 'worker-stall':
        return this.stallWorker(record);
    }
  }

  /**
   * A handler slower than its lease, without a test hook in the product: a row lock of our own holds
   * a worker inside the business transaction of an upcoming payment; that worker is then frozen
   * (SIGSTOP) past its lease while another takes the event over, and thawed. Its transaction resumes
   * late, and fencing must refuse its commit.
   */
  private async stallWorker(record: (target: string, databaseDown?: boolean, extra?: Partial<FaultRecord>) => FaultRecord): Promise<FaultRecord> {
    const { cluster } = this;
    const lease = cluster.options.leaseSeconds * 1000;
    const payment = this.simulator.upcomingPayment();
    if (!payment) return record('none', false, { note: 'no payment left to hold' });
    const fencedBefore = cluster.leaseLost;
    const holder = await holdPayment(cluster.db, payment.provider, payment.paymentId);
    let frozen: ProcessingProcess | undefined;
    try {
      const deadline = Date.now() + 20_000;
      while (!frozen && Date.now() < deadline) {
        const row = await cluster.db
          .selectFrom('webhook_events')
          .select('lease_owner')
          .where('provider', '=', payment.provider)
          .where('payment_id', '=', payment.paymentId)
          .where('status', '=', 'processing')
          .executeTakeFirst();
        const owner = row?.lease_owner ? cluster.processOwning(row.lease_owner) : undefined;
        // A dead owner's lease is left to expire: only a living process can be frozen in its transaction.
        frozen = owner?.child.exitCode === null && owner.child.signalCode === null ? owner : undefined;
        if (!frozen) await sleep(20);
      }
      // SIGSTOP: the process keeps its connections and open transactions but runs no code.
      frozen?.child.kill('SIGSTOP');
    } finally {
      // Lets the frozen worker's insert go through on the server: its transaction now holds the row.
      await holder
        .rollback()
        .execute()
        .catch(() => undefined);
    }
    if (!frozen) return record(`payment ${payment.paymentId}`, false, { note: 'its events were not claimed in time; nothing frozen' });
    await sleep(lease + 1000);
    frozen.child.kill('SIGCONT');
    const endedAt = Date.now();
    // The thawed transaction finds its lease taken over and rolls back.
    await sleep(1000);
    return { ...record(`${frozen.name} (payment ${payment.paymentId})`), endedAt, fencedCommits: cluster.leaseLost - fencedBefore };
  }

  private async measureDrain(fault: FaultRecord): Promise<void> {
    const { db } = this.cluster;
    const deadline = fault.endedAt + 180_000;
    const events = db.selectFrom('webhook_events');
    const maxId = await retrying(async () => Number((await events.select((eb) => eb.fn.max('id').as('n')).executeTakeFirst())?.n ?? 0), deadline);
    const backlog = events
      .select((eb) => eb.fn.countAll().as('n'))
      .where('id', '<=', maxId)
      .where('status', '<>', 'processed');
    while (Date.now() < deadline) {
      const open = await retrying(async () => Number((await backlog.executeTakeFirstOrThrow()).n), deadline);
      if (open === 0) {
        fault.drainedMs = Date.now() - fault.endedAt;
        return;
      }
      await sleep(200);
    }
    fault.drainedMs = null;
  }
}

async function timed(what: string, action: () => Promise<void>): Promise<string> {
  const started = Date.now();
  await action();
  return `${what} took ${((Date.now() - started) / 1000).toFixed(1)} s`;
}

/** One number from the database, trying again through later outages until the deadline. */
async function retrying(query: () => Promise<number>, deadline: number): Promise<number> {
  for (;;) {
    try {
      return await query();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await sleep(250);
    }
  }
}
