import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { openSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { TEST_SECRETS } from '../test/support/signing.js';

const ROOT = resolve(import.meta.dirname, '..');
const run = promisify(execFile);

/** The database servers a bench target can run on (SQLite runs inside the service's own process). */
export type BenchStore = 'mysql' | 'postgres' | 'sqlite';

/** A server under test: the bench's baseline, or webhook-inbox in one mode on one store. */
export interface TargetSpec {
  name: string;
  label: string;
  /**
   * `receiver`: webhook-inbox without workers (`serve --no-workers`), its acknowledgement path alone.
   * `naive`: the hand-written peer (bench/naive-server.ts), which processes inline before answering.
   */
  kind: 'baseline' | 'inbox' | 'receiver' | 'naive';
  store: BenchStore;
  /** Extra environment for `webhook-inbox serve` (processing mode). */
  env: Record<string, string>;
  /**
   * The baseline server without its INSERT: what this machine's HTTP, signature check and load
   * generator can do at all, so a run shows whether the database or the harness bounds the baseline.
   * Nothing is stored, so the load generator's pre-signed pool may repeat.
   */
  noDatabase?: true;
}

const MARIADB_TARGETS: TargetSpec[] = [
  { name: 'baseline', label: 'baseline (node:http + 1 INSERT IGNORE)', kind: 'baseline', store: 'mysql', env: {} },
  { name: 'ceiling', label: 'ceiling (node:http + signature check, no database)', kind: 'baseline', store: 'mysql', env: {}, noDatabase: true },
  { name: 'background', label: 'webhook-inbox, background (default)', kind: 'inbox', store: 'mysql', env: { PROCESSING_MODE: 'background' } },
  { name: 'inline', label: 'webhook-inbox, inline', kind: 'inbox', store: 'mysql', env: { PROCESSING_MODE: 'inline' } },
  { name: 'receive-only', label: 'webhook-inbox, receive only (no workers)', kind: 'receiver', store: 'mysql', env: {} },
  { name: 'sqlite', label: 'webhook-inbox, background, SQLite', kind: 'inbox', store: 'sqlite', env: { PROCESSING_MODE: 'background' } },
  { name: 'sqlite-receive-only', label: 'webhook-inbox, receive only (no workers), SQLite', kind: 'receiver', store: 'sqlite', env: {} },
  { name: 'naive', label: 'naive handler (Express + mysql2, 3 autocommit statements inline)', kind: 'naive', store: 'mysql', env: {} },
];

/** What the names of a server's targets start with: PostgreSQL's `pg-`, MariaDB's (and SQLite's) nothing. */
const prefixOf = (store: BenchStore) => (store === 'postgres' ? 'pg-' : '');

/** The PostgreSQL twin of a MariaDB target: the same server, run on a PostgreSQL database of its own. */
const onPostgres = (name: string, label: string): TargetSpec => ({
  ...MARIADB_TARGETS.find((t) => t.name === name)!,
  name: `${prefixOf('postgres')}${name}`,
  label,
  store: 'postgres',
});

const POSTGRES_TARGETS: TargetSpec[] = [
  onPostgres('baseline', 'PostgreSQL baseline (node:http + 1 INSERT ... ON CONFLICT DO NOTHING)'),
  onPostgres('background', 'webhook-inbox, background (default), PostgreSQL'),
  onPostgres('receive-only', 'webhook-inbox, receive only (no workers), PostgreSQL'),
  onPostgres('naive', 'naive handler (Express + pg, 3 autocommit statements inline), PostgreSQL'),
];

/** Every target, in the order a full run measures them: MariaDB's, then PostgreSQL's. */
export const TARGETS: Record<string, TargetSpec> = Object.fromEntries([...MARIADB_TARGETS, ...POSTGRES_TARGETS].map((spec) => [spec.name, spec]));

/**
 * The target named `peer` (`baseline` or `naive`) on the same database server as `target`: ratios are
 * read within one server, so a PostgreSQL row is never quoted against MariaDB's baseline. SQLite,
 * which has no server, is quoted against MariaDB's, as before there was a second server.
 */
export function peerOf(target: string, peer: 'baseline' | 'naive'): string {
  return peerOn(TARGETS[target]!.store, peer);
}

/** What MariaDB's `name` (a target, `baseline` say, or a step's files) is called on `store`'s server. */
export function peerOn(store: BenchStore, name: string): string {
  return `${prefixOf(store)}${name}`;
}

/**
 * What MariaDB's `name` (a target or a step's files) is called when it runs on `store` itself: as
 * peerOn, except that SQLite, which borrows MariaDB's baseline and naive handler, has its own
 * (`sqlite-receive-only`, `sqlite-backlog-worker`).
 */
export function ownOn(store: BenchStore, name: string): string {
  return store === 'sqlite' ? `sqlite-${name}` : peerOn(store, name);
}

/** Whether `store`'s database runs inside the process that uses it (SQLite): its CPU is that process's, and it has no server counters. */
export const inProcess = (store: BenchStore): boolean => store === 'sqlite';

/** Targets whose deliveries are processed (rows marked processed), so the bench measures keep-up and lag for them. */
export const processes = (spec: TargetSpec): boolean => spec.kind === 'inbox' || spec.kind === 'naive';

export interface RunningTarget {
  url: string;
  pid: number;
  /** Peak resident set size of the service process so far (VmHWM), in MB. */
  peakRssMb(): number;
  /** CPU time (user + system) the service process has used so far, in seconds. */
  cpuSeconds(): number;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

function peakRssMb(pid: number): number {
  const line = /VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return line ? Math.round(Number(line[1]) / 1024) : NaN;
}

/** utime + stime from /proc/PID/stat (fields 14 and 15, after the parenthesised command name). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/** USER_HZ: 100 on every Linux architecture Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

async function waitUntilListening(url: string, child: ChildProcess, logFile: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`target exited with ${child.exitCode}; see ${logFile}:\n${readFileSync(logFile, 'utf8').slice(-2000)}`);
    try {
      await fetch(`${url}/webhooks/stripe`, { method: 'GET' });
      return;
    } catch {
      if (Date.now() > deadline) throw new Error(`target did not listen within 30 s; see ${logFile}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Compiles the service to dist/ (`npm run compile`), so the targets run the current sources. */
export async function buildService(): Promise<void> {
  await run('npm', ['run', '--silent', 'compile'], { cwd: ROOT });
}

/** What every bench process of the service needs: a PATH and the providers' test secrets. */
const providerEnvironment = () => ({
  PATH: process.env.PATH ?? '',
  STRIPE_WEBHOOK_SECRET: TEST_SECRETS.stripe,
  RAZORPAY_WEBHOOK_SECRET: TEST_SECRETS.razorpay,
  PAYU_MERCHANT_KEY: TEST_SECRETS.payuKey,
  PAYU_MERCHANT_SALT: TEST_SECRETS.payuSalt,
});

/** A `webhook-inbox worker` process (background workers, no HTTP), measured like a target. */
export interface RunningWorker {
  pid: number;
  /** Throws, with the end of its log, when the worker has exited (it should run until stopped). */
  assertRunning(): void;
  cpuSeconds(): number;
  peakRssMb(): number;
  stop(): Promise<void>;
}

/** Starts `webhook-inbox worker` on `databaseUrl`: processing alone, for the backlog step. */
export function startWorker(databaseUrl: string, logDir: string, extra: { nodeArgs?: string[]; env?: Record<string, string> } = {}): RunningWorker {
  const logFile = join(logDir, `worker-${Date.now()}.log`);
  const log = openSync(logFile, 'a');
  const child = spawn(process.execPath, [...(extra.nodeArgs ?? []), join(ROOT, 'dist/cli/main.js'), 'worker'], {
    cwd: ROOT,
    env: { ...providerEnvironment(), DATABASE_URL: databaseUrl, PROCESSING_MODE: 'background', ...extra.env },
    stdio: ['ignore', log, log],
  });
  const pid = child.pid!;
  return {
    pid,
    assertRunning() {
      if (child.exitCode !== null) throw new Error(`the worker exited with ${child.exitCode}; see ${logFile}:\n${readFileSync(logFile, 'utf8').slice(-2000)}`);
    },
    cpuSeconds: () => cpuSeconds(pid),
    peakRssMb: () => peakRssMb(pid),
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/**
 * Starts a target as its own process with the service's default settings (LOG_LEVEL info, logs to a
 * file), so its CPU and memory are measured apart from the load generator's.
 */
export async function startTarget(
  spec: TargetSpec,
  databaseUrl: string,
  logDir: string,
  extra: { nodeArgs?: string[]; env?: Record<string, string> } = {},
): Promise<RunningTarget> {
  const port = await freePort();
  const logFile = join(logDir, `${spec.name}-${port}.log`);
  const log = openSync(logFile, 'a');
  // The service as production runs it: compiled (buildService), not through tsx, whose loader thread
  // and transpiler would add about 50 MB to its memory.
  const script = {
    baseline: ['--import', 'tsx', join(ROOT, 'bench/baseline-server.ts')],
    inbox: [join(ROOT, 'dist/cli/main.js'), 'serve'],
    receiver: [join(ROOT, 'dist/cli/main.js'), 'serve', '--no-workers'],
    naive: ['--import', 'tsx', join(ROOT, 'bench/naive-server.ts')],
  }[spec.kind];
  const env = {
    ...providerEnvironment(),
    HOST: '127.0.0.1',
    PORT: String(port),
    // The ceiling gets no database at all: if it tried to store, every delivery would fail.
    ...(spec.noDatabase ? { BENCH_NO_DATABASE: '1' } : { DATABASE_URL: databaseUrl, BENCH_DATABASE_URL: databaseUrl }),
    ...spec.env,
    ...(spec.kind === 'inbox' || spec.kind === 'receiver' ? extra.env : {}),
  };
  const child = spawn(process.execPath, [...(extra.nodeArgs ?? []), ...script], { cwd: ROOT, env, stdio: ['ignore', log, log] });
  const url = `http://127.0.0.1:${port}`;
  await waitUntilListening(url, child, logFile);
  const pid = child.pid!;
  return {
    url,
    pid,
    peakRssMb: () => peakRssMb(pid),
    cpuSeconds: () => cpuSeconds(pid),
    async stop() {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}
