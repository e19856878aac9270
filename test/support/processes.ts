import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { exitOf, runCli, type CliProcess } from './cli.js';
import { waitFor } from './harness.js';
import { TEST_SECRETS } from './signing.js';

/** Generous: several processes starting at once on a busy machine each take many seconds. */
const START_TIMEOUT_MS = 90_000;

/**
 * Every long-running child still alive, so a test that fails half-way (one process of several did
 * not start) leaves none behind: its file would otherwise never exit. `killAll()` in `after` stops
 * them; the exit hook is the last resort.
 */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

function startTracked(args: string[], env: Record<string, string>, cwd?: string): CliProcess {
  const child = runCli(args, env, cwd);
  running.add(child);
  child.on('exit', () => running.delete(child));
  return child;
}

export async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}

/**
 * The environment every inbox process of a test gets: test secrets, quiet unless asked, and a record
 * timeout that a busy test machine does not reach (tests of back-pressure set their own).
 */
export function inboxEnv(env: Record<string, string>): Record<string, string> {
  return { HOST: '127.0.0.1', LOG_LEVEL: 'warn', RECORD_TIMEOUT_MS: '10000', STRIPE_WEBHOOK_SECRET: TEST_SECRETS.stripe, ...env };
}

/** Starts `webhook-inbox serve [flags]` on a free port; resolves with its base URL once it answers HTTP. */
export async function serve(env: Record<string, string>, flags: string[] = [], cwd?: string): Promise<{ child: CliProcess; url: string }> {
  const port = await freePort();
  const child = startTracked(['serve', ...flags], inboxEnv({ PORT: String(port), ...env }), cwd);
  const url = `http://127.0.0.1:${port}`;
  await waitFor(
    'serve to answer HTTP',
    async () => {
      if (child.exitCode !== null) throw new Error(`serve exited:\n${child.output()}`);
      return fetch(url).then(
        () => true,
        () => false,
      );
    },
    START_TIMEOUT_MS,
  );
  return { child, url };
}

/** Starts `webhook-inbox worker`; resolves once its workers run. */
export async function worker(env: Record<string, string>): Promise<CliProcess> {
  const child = startTracked(['worker'], inboxEnv({ ...env, LOG_LEVEL: 'info' }));
  await waitFor(
    'worker to start',
    () => {
      if (child.exitCode !== null) throw new Error(`worker exited:\n${child.output()}`);
      return child.output().includes('workers started');
    },
    START_TIMEOUT_MS,
  );
  return child;
}

/** Stops every child still running (SIGKILL: tests clean up, they do not test shutdown here). */
export async function killAll(): Promise<void> {
  await Promise.all(
    [...running].map(async (child) => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGKILL');
      await exitOf(child);
    }),
  );
}
