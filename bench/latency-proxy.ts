import { fork } from 'node:child_process';
import { once } from 'node:events';
import { TcpProxy } from '../test/support/tcp-proxy.js';

/**
 * A database across a network, on one machine: a TCP forwarder in front of MariaDB that holds every
 * chunk `delayMs` before passing it on, in each direction, so a round trip costs `2 x delayMs` more.
 * Commits then cost what they cost against a database in another zone or behind synchronous
 * replication, which is where recording a batch in one round trip instead of one per delivery pays.
 *
 * It runs as its own process (its CPU is neither the bench's nor a target's); the bench's own
 * statements (drains, fills) go to the database directly.
 */
export interface LatencyProxy {
  /** `databaseUrl` with its host and port replaced by the proxy's. */
  route(databaseUrl: string): string;
  stop(): Promise<void>;
}

export async function startLatencyProxy(databaseServerUrl: string, delayMs: number): Promise<LatencyProxy> {
  const server = new URL(databaseServerUrl);
  const child = fork(import.meta.filename, [server.hostname, server.port || '3306', String(delayMs)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const [{ port }] = (await once(child, 'message')) as [{ port: number }];
  return {
    route(databaseUrl) {
      const routed = new URL(databaseUrl);
      routed.hostname = '127.0.0.1';
      routed.port = String(port);
      return routed.toString();
    },
    async stop() {
      if (child.exitCode !== null) return;
      child.kill();
      await once(child, 'exit');
    },
  };
}

if (process.argv[1] === import.meta.filename) {
  const [host, port, delay] = process.argv.slice(2) as [string, string, string];
  const proxy = new TcpProxy({ host, port: Number(port) }, Number(delay));
  await proxy.open();
  process.send!({ port: proxy.port });
  process.on('disconnect', () => process.exit(0));
}
