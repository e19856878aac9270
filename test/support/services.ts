import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { createConnection } from 'mysql2/promise';
import pg from 'pg';
import { waitFor } from './harness.js';
import { exitOf } from './cli.js';
import type { StoreBackendName } from './database.js';
import { freePort } from './processes.js';

/**
 * Redis for the tests: the shared server (a stream of its own per test file), or a private
 * redis-server / mariadbd / postgres that a fault test may flush, stop and restart without disturbing anyone.
 * Missing services skip the tests locally and fail them when REQUIRE_SERVICES=1 (as in CI).
 */
const SHARED_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export interface Unavailable {
  skip: string;
}

function unavailable(reason: string): Unavailable {
  if (process.env.REQUIRE_SERVICES === '1') throw new Error(`${reason} (REQUIRE_SERVICES=1)`);
  return { skip: reason };
}

/** The workers' consumer group: entries delivered and not acknowledged, and entries read in all. */
export interface GroupState {
  pending: number;
  entriesRead: number;
}

export interface TestStream {
  url: string;
  stream: string;
  group(): Promise<GroupState | null>;
  drop(): Promise<void>;
}

/** A uniquely named stream on the shared Redis, deleted afterwards. */
export async function createTestStream(): Promise<TestStream | Unavailable> {
  const redis = new Redis(SHARED_REDIS_URL, { lazyConnect: true, connectTimeout: 2000, maxRetriesPerRequest: 0, retryStrategy: () => null });
  try {
    await redis.connect();
    await redis.ping();
  } catch (error) {
    redis.disconnect();
    return unavailable(`Redis not reachable at ${SHARED_REDIS_URL}: ${(error as Error).message}`);
  }
  const stream = `wi_test_${process.pid}_${randomBytes(4).toString('hex')}`;
  return {
    url: SHARED_REDIS_URL,
    stream,
    group: () => groupState(redis, stream),
    async drop() {
      await redis.del(stream);
      redis.disconnect();
    },
  };
}

async function groupState(redis: Redis, stream: string): Promise<GroupState | null> {
  const groups = (await redis.xinfo('GROUPS', stream).catch(() => [])) as Array<Array<string | number>>;
  if (groups.length === 0) return null;
  const field = (name: string) => Number(groups[0]![groups[0]!.indexOf(name) + 1]);
  return { pending: field('pending'), entriesRead: field('entries-read') };
}

function binary(name: string): string | null {
  const found = spawnSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).stdout.trim();
  if (found) return found;
  return existsSync(`/usr/sbin/${name}`) ? `/usr/sbin/${name}` : null;
}

/** Starts `command` and waits for `ready`; the child is killed when it does not get there. */
async function startServer(
  command: string,
  args: string[],
  what: string,
  ready: () => Promise<boolean>,
  logs: () => string,
  user: { uid: number; gid: number } | null = null,
): Promise<ChildProcess> {
  const child = spawn(command, args, { stdio: 'ignore', ...(user ?? {}) });
  try {
    await waitFor(
      `${what} to accept connections`,
      async () => {
        if (child.exitCode !== null) throw new Error(`${what} exited with ${child.exitCode}\n${logs()}`);
        return ready();
      },
      30_000,
    );
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
  return child;
}

async function stopServer(child: ChildProcess | undefined): Promise<void> {
  if (child?.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGTERM');
  await exitOf(child);
}

export class PrivateRedis {
  private child: ChildProcess | undefined;
  private readonly client: Redis;

  private constructor(
    private readonly command: string,
    readonly port: number,
  ) {
    this.client = new Redis(this.url, { maxRetriesPerRequest: 0, enableOfflineQueue: false, retryStrategy: () => 100 });
    this.client.on('error', () => undefined); // Restarts are the point; the next command shows the state.
  }

  static async start(): Promise<PrivateRedis | Unavailable> {
    const command = binary('redis-server');
    if (!command) return unavailable('redis-server not found on PATH');
    const redis = new PrivateRedis(command, await freePort());
    await redis.restart();
    return redis;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /** Stops the server (if running) and starts it again on the same port, empty. */
  async restart(): Promise<void> {
    await stopServer(this.child);
    const ping = () =>
      this.client.ping().then(
        () => true,
        () => false,
      );
    this.child = await startServer(this.command, ['--port', String(this.port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], 'redis-server', ping, () => '');
    await waitFor('test client to reconnect to redis', ping);
  }

  async flushAll(): Promise<void> {
    await this.client.flushall();
  }

  async group(stream: string): Promise<GroupState | null> {
    return groupState(this.client, stream);
  }

  async stop(): Promise<void> {
    this.client.disconnect();
    await stopServer(this.child);
  }
}

/** The server stores a fault test can run on a private server of (SQLite has no server to break). */
export const SERVER_BACKENDS = ['mysql', 'postgres'] as const satisfies readonly StoreBackendName[];
export type ServerBackendName = (typeof SERVER_BACKENDS)[number];
/** How test names and reports call each server store. */
export const STORE_NAMES: Record<ServerBackendName, string> = { mysql: 'MariaDB', postgres: 'PostgreSQL' };

/** What a fault test does to its private database server, whichever kind. */
export interface PrivateDatabaseServer {
  /** Server URL, without a database. */
  readonly url: string;
  startServer(): Promise<void>;
  /** A clean shutdown, as when an operator stops the server. */
  stopServer(): Promise<void>;
  /** A crash: no shutdown, connections dropped; the next start recovers from the server's log. */
  kill(): Promise<void>;
  /** Freezes the server: connections stay open but nothing answers. */
  pause(): void;
  resume(): void;
  destroy(): Promise<void>;
}

export function startPrivateDatabase(backend: ServerBackendName): Promise<PrivateDatabaseServer | Unavailable> {
  return backend === 'mysql' ? PrivateMariadb.start() : PrivatePostgres.start();
}

/** A mariadbd of the test's own (datadir, port, socket), which the test may stop, pause and restart. */
export class PrivateMariadb implements PrivateDatabaseServer {
  private child: ChildProcess | undefined;

  private constructor(
    private readonly command: string,
    private readonly dir: string,
    readonly port: number,
  ) {}

  static async start(): Promise<PrivateMariadb | Unavailable> {
    const install = binary('mariadb-install-db');
    const command = binary('mariadbd');
    if (!install || !command) return unavailable('mariadb-install-db or mariadbd not found');
    const dir = await mkdtemp(path.join(tmpdir(), 'wi-mariadb-'));
    const installed = spawnSync(install, ['--no-defaults', `--datadir=${dir}/data`, '--auth-root-authentication-method=normal', '--skip-test-db', '--user=root'], {
      encoding: 'utf8',
    });
    if (installed.status !== 0) throw new Error(`mariadb-install-db failed:\n${installed.stdout}${installed.stderr}`);
    const server = new PrivateMariadb(command, dir, await freePort());
    await server.startServer();
    return server;
  }

  /** Server URL, without a database. */
  get url(): string {
    return `mysql://root@127.0.0.1:${this.port}`;
  }

  async startServer(): Promise<void> {
    const args = [
      '--no-defaults',
      `--datadir=${this.dir}/data`,
      `--port=${this.port}`,
      `--socket=${this.dir}/mysqld.sock`,
      `--pid-file=${this.dir}/mysqld.pid`,
      `--log-error=${this.dir}/error.log`,
      '--bind-address=127.0.0.1',
      '--skip-grant-tables',
      '--user=root',
      '--innodb-buffer-pool-size=64M',
    ];
    const ping = () =>
      createConnection({ uri: this.url, connectTimeout: 1000 }).then(
        (c) => c.end().then(() => true),
        () => false,
      );
    const logs = () => spawnSync('tail', ['-20', `${this.dir}/error.log`], { encoding: 'utf8' }).stdout;
    this.child = await startServer(this.command, args, 'mariadbd', ping, logs);
  }

  /** A clean shutdown, as when an operator stops the server; connections are closed. */
  async stopServer(): Promise<void> {
    await stopServer(this.child);
  }

  /** A crash: no shutdown, connections dropped; InnoDB recovers from its redo log at the next start. */
  async kill(): Promise<void> {
    if (this.child?.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGKILL');
    await exitOf(this.child);
  }

  /** Freezes the server: connections stay open but nothing answers (a hanging database). */
  pause(): void {
    this.child?.kill('SIGSTOP');
  }

  resume(): void {
    this.child?.kill('SIGCONT');
  }

  async destroy(): Promise<void> {
    this.resume();
    if (this.child?.exitCode === null) {
      this.child.kill('SIGKILL');
      await exitOf(this.child);
    }
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Where Debian puts the server's programs (not on PATH). */
const POSTGRES_BIN = process.env.TEST_POSTGRES_BIN ?? '/usr/lib/postgresql/15/bin';

/**
 * A postgres of the test's own (data directory, port, socket directory), which the test may stop,
 * kill, pause and restart. Its login takes a password (scram), so a wrong one is refused. PostgreSQL
 * refuses to run as root: when the test runs as root, the server runs as the `postgres` account.
 */
export class PrivatePostgres implements PrivateDatabaseServer {
  static readonly PASSWORD = 'wi-private-secret';
  private child: ChildProcess | undefined;

  private constructor(
    private readonly dir: string,
    private readonly owner: { uid: number; gid: number } | null,
    readonly port: number,
  ) {}

  static async start(): Promise<PrivatePostgres | Unavailable> {
    if (!existsSync(path.join(POSTGRES_BIN, 'initdb'))) return unavailable(`initdb not found in ${POSTGRES_BIN} (TEST_POSTGRES_BIN)`);
    const owner = process.getuid?.() === 0 ? account('postgres') : null;
    if (process.getuid?.() === 0 && !owner) return unavailable('running as root, and there is no postgres account to run the server as');
    const dir = await mkdtemp(path.join(tmpdir(), 'wi-postgres-'));
    await writeFile(path.join(dir, 'password'), PrivatePostgres.PASSWORD);
    if (owner) for (const file of [dir, path.join(dir, 'password')]) await chown(file, owner.uid, owner.gid);
    const installed = spawnSync(
      path.join(POSTGRES_BIN, 'initdb'),
      ['-D', `${dir}/data`, '-U', 'postgres', '--auth=scram-sha-256', `--pwfile=${dir}/password`, '--encoding=UTF8', '--no-locale', '--no-sync'],
      { encoding: 'utf8', ...(owner ?? {}) },
    );
    if (installed.status !== 0) throw new Error(`initdb failed:\n${installed.stdout}${installed.stderr}`);
    const server = new PrivatePostgres(dir, owner, await freePort());
    await server.startServer();
    return server;
  }

  /** Server URL with the password, without a database. */
  get url(): string {
    return `postgres://postgres:${PrivatePostgres.PASSWORD}@127.0.0.1:${this.port}`;
  }

  async startServer(): Promise<void> {
    // Connections for a cluster of processes with a pool each (the chaos suite runs six, plus its own):
    // running out would answer 503 where no fault is.
    const args = ['-D', `${this.dir}/data`, '-p', String(this.port), '-k', this.dir, '-c', 'listen_addresses=127.0.0.1', '-c', 'shared_buffers=32MB', '-c', 'max_connections=200'];
    const ping = async () => {
      const client = new pg.Client({ connectionString: `${this.url}/postgres`, connectionTimeoutMillis: 1000 });
      client.on('error', () => undefined);
      try {
        await client.connect();
        return true;
      } catch {
        return false;
      } finally {
        await client.end().catch(() => undefined);
      }
    };
    const logs = () => spawnSync('tail', ['-20', `${this.dir}/server.log`], { encoding: 'utf8' }).stdout;
    this.child = await startServer('sh', ['-c', `exec ${POSTGRES_BIN}/postgres "$@" >>${this.dir}/server.log 2>&1`, 'postgres', ...args], 'postgres', ping, logs, this.owner);
  }

  /** A fast shutdown (SIGINT), as when an operator stops the server: sessions are ended, the server exits. */
  async stopServer(): Promise<void> {
    if (this.child?.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGINT');
    await exitOf(this.child);
  }

  /** A crash of the postmaster: its backends go with it; the next start recovers from the WAL. */
  async kill(): Promise<void> {
    if (this.child?.exitCode !== null || this.child.signalCode !== null) return;
    spawnSync('pkill', ['-KILL', '-P', String(this.child.pid)]);
    this.child.kill('SIGKILL');
    await exitOf(this.child);
  }

  /**
   * Freezes the server: connections stay open but nothing answers (a hanging database). Each session
   * is a process of its own, so the postmaster is stopped first (it forks no new one), then its children.
   */
  pause(): void {
    if (this.child?.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGSTOP');
    spawnSync('pkill', ['-STOP', '-P', String(this.child.pid)]);
  }

  resume(): void {
    if (this.child?.exitCode !== null || this.child.signalCode !== null) return;
    spawnSync('pkill', ['-CONT', '-P', String(this.child.pid)]);
    this.child.kill('SIGCONT');
  }

  async destroy(): Promise<void> {
    this.resume();
    await this.kill();
    await rm(this.dir, { recursive: true, force: true });
  }
}

function account(name: string): { uid: number; gid: number } | null {
  const found = spawnSync('id', ['-u', name], { encoding: 'utf8' });
  if (found.status !== 0) return null;
  return { uid: Number(found.stdout.trim()), gid: Number(spawnSync('id', ['-g', name], { encoding: 'utf8' }).stdout.trim()) };
}
