import assert from 'node:assert/strict';
import type { Kysely } from 'kysely';
import type { CoursePlatformDatabase } from '../src/course-platform/schema.js';
import { inspectDatabase } from '../test/support/database.js';
import { waitFor } from '../test/support/harness.js';
import { exitOf, runCli, type CliProcess } from '../test/support/cli.js';
import { freePort, kill, serve, worker } from '../test/support/processes.js';
import { PrivateRedis, startPrivateDatabase, type PrivateDatabaseServer, type ServerBackendName, type Unavailable } from '../test/support/services.js';
import { TEST_SECRETS } from '../test/support/signing.js';

export interface ClusterOptions {
  /** The store, on a private server of the run's own. */
  store: ServerBackendName;
  receivers: number;
  /**
   * How many of the receivers run `serve` in its default mode, their workers in a thread of their
   * own beside the HTTP server (the one-process shape); the others run `serve --no-workers`.
   */
  processingReceivers: number;
  workers: number;
  leaseSeconds: number;
}

/** A worker's log line when fencing refused its commit (src/processing/processor.ts). */
const LEASE_LOST = 'lease lost before commit';
/** A receiver's log line when its workers' thread died on its own (src/service/processing-thread.ts). */
const THREAD_EXITED = "the workers' thread exited";

export type ProcessingKind = 'worker' | 'receiver thread';

/** A process that processes events: a `worker`, or a receiver with its workers' thread. */
export interface ProcessingProcess {
  name: string;
  kind: ProcessingKind;
  child: CliProcess;
}

/**
 * The system under test, on servers of its own: N receivers (`serve`, fixed ports so a restarted one
 * is reached at the same address; the first few with their workers' thread, the rest with
 * `--no-workers`) and M workers (`worker`) on a private MariaDB or PostgreSQL and a private Redis
 * that the fault injector may kill, freeze, flush and restart.
 */
export class ChaosCluster {
  readonly receiverUrls: string[];
  private readonly receivers: CliProcess[] = [];
  private readonly workers: CliProcess[] = [];
  /** Every process ever started, so that none outlives the run. */
  private readonly started: CliProcess[] = [];
  /** Commits refused by fencing, over all processing processes (dead ones included). */
  leaseLost = 0;
  /** Every process that ever processed, by pid, dead ones included: lease owners name them by pid. */
  private readonly processing = new Map<number, ProcessingProcess>();
  /** Workers' threads that died inside a living receiver (a finding, as a process's own exit is). */
  private readonly threadExits: string[] = [];
  /** Starts that failed (did not answer within 30 s, or exited), with the process's output. */
  readonly startFailures: string[] = [];
  /** The checker's own connections: invariants, drain watchers, the stall fault's row lock. */
  readonly db: Kysely<CoursePlatformDatabase>;

  private constructor(
    readonly options: ClusterOptions,
    readonly database: PrivateDatabaseServer,
    readonly redis: PrivateRedis,
    private readonly ports: number[],
    private readonly env: Record<string, string>,
  ) {
    this.receiverUrls = ports.map((port) => `http://127.0.0.1:${port}`);
    this.db = inspectDatabase(this.databaseUrl);
  }

  static async start(options: ClusterOptions): Promise<ChaosCluster | Unavailable> {
    const database = await startPrivateDatabase(options.store);
    if ('skip' in database) return database;
    const redis = await PrivateRedis.start();
    if ('skip' in redis) {
      await database.destroy();
      return redis;
    }
    // Created by `migrate` on either server.
    const databaseUrl = `${database.url}/webhook_inbox`;
    const env = {
      DATABASE_URL: databaseUrl,
      REDIS_URL: redis.url,
      RAZORPAY_WEBHOOK_SECRET: TEST_SECRETS.razorpay,
      PAYU_MERCHANT_KEY: TEST_SECRETS.payuKey,
      PAYU_MERCHANT_SALT: TEST_SECRETS.payuSalt,
      LEASE_SECONDS: String(options.leaseSeconds),
      SWEEP_INTERVAL_MS: '250',
      RETRY_BASE_SECONDS: '1',
      RETRY_MAX_SECONDS: '2',
      // Outages and takeovers cost attempts; none of them may make an event give up.
      MAX_ATTEMPTS: '100',
      WORKER_CONCURRENCY: '4',
    };
    const migrate = runCli(['migrate'], env);
    assert.equal(await exitOf(migrate), 0, migrate.output());
    const ports = await Promise.all(Array.from({ length: options.receivers }, () => freePort()));
    const cluster = new ChaosCluster(options, database, redis, ports, env);
    await Promise.all([...ports.keys()].map((i) => cluster.restartReceiver(i)));
    await Promise.all(Array.from({ length: options.workers }, (_, i) => cluster.restartWorker(i)));
    return cluster;
  }

  get databaseUrl(): string {
    return this.env.DATABASE_URL!;
  }

  async killReceiver(i: number): Promise<void> {
    await kill(this.receivers[i]!);
  }

  async restartReceiver(i: number): Promise<void> {
    const processing = i < this.options.processingReceivers;
    const { child, url } = await this.startingAgain(`receiver ${i}`, () => serve({ ...this.env, PORT: String(this.ports[i]) }, processing ? [] : ['--no-workers']));
    if (processing) this.watchProcessing({ name: `receiver ${i}`, kind: 'receiver thread', child });
    this.receivers[i] = child;
    this.started.push(child);
    // As a load balancer would: traffic only once the receiver reports ready (its database answers).
    await waitFor(
      `receiver ${i} ready`,
      () =>
        fetch(`${url}/readyz`).then(
          (r) => r.ok,
          () => false,
        ),
      90_000,
    );
  }

  async killWorker(i: number): Promise<void> {
    await kill(this.workers[i]!);
  }

  async restartWorker(i: number): Promise<void> {
    const child = await this.startingAgain(`worker ${i}`, () => worker(this.env));
    this.watchProcessing({ name: `worker ${i}`, kind: 'worker', child });
    this.workers[i] = child;
    this.started.push(child);
  }

  /** A process that did not come up is a finding: recorded with its output, then started again. */
  private async startingAgain<T>(what: string, start: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await start();
      } catch (error) {
        this.startFailures.push(`${what}: ${(error as Error).message}`);
        if (attempt === 3) throw error;
      }
    }
  }

  /** The process a lease owner (host:pid:uuid) names, a worker or a receiver with its workers' thread, dead ones included. */
  processOwning(leaseOwner: string): ProcessingProcess | undefined {
    return this.processing.get(Number(leaseOwner.split(':').at(-2)));
  }

  /** Processes, and receivers' workers' threads, that exited without being killed by the injector (a crash is a finding). */
  unexpectedExits(): string[] {
    const processes = [...this.receivers, ...this.workers]
      .filter((child) => child.exitCode !== null)
      .map((child) => `pid ${child.pid} exited ${child.exitCode}:\n${child.output().slice(-2000)}`);
    return [...processes, ...this.threadExits];
  }

  async stop(): Promise<void> {
    for (const child of this.started) if (child.signalCode === 'SIGSTOP') child.kill('SIGCONT');
    await Promise.all(this.started.map(kill));
    await this.db.destroy().catch(() => undefined);
    await this.redis.stop();
    await this.database.destroy();
  }

  /** Remembers the process by its pid, counts its refused commits and keeps the lines of its workers' thread dying. */
  private watchProcessing(watched: ProcessingProcess): void {
    const { name, child } = watched;
    if (child.pid !== undefined) this.processing.set(child.pid, watched);
    let partial = '';
    child.stdout.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop()!;
      this.leaseLost += lines.filter((line) => line.includes(LEASE_LOST)).length;
      this.threadExits.push(...lines.filter((line) => line.includes(THREAD_EXITED)).map((line) => `${name} (pid ${child.pid}): ${line}`));
    });
  }
}
