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

/** Starts `webhook-inbox serve [flags]` on `env.PORT` or a free port; resolves with its base URL once it answers HTTP. */
export async function serve(env: Record<string, string>, flags: string[] = [], cwd?: string): Promise<{ child: CliProcess; url: string }> {
  const port = env.PORT ? Number(env.PORT) : await freePort();
  const child = startTracked(['serve', ...flags], inboxEnv({ PORT: String(port), ...env }), cwd);
  const url = `http://127.0.0.1:${port}`;
  await startedOrKilled(child, 'serve to answer HTTP', () =>
    fetch(url).then(
      () => true,
      () => false,
    ),
  );
  return { child, url };
}

/** Starts `webhook-inbox worker`; resolves once its workers run. */
export async function worker(env: Record<string, string>): Promise<CliProcess> {
  const child = startTracked(['worker'], inboxEnv({ ...env, LOG_LEVEL: 'info' }));
  await startedOrKilled(child, 'worker to start', () => child.output().includes('workers started'));
  return child;
}

/** Waits for `ready`; a child that exits or never gets there is killed (freeing its port), and the error carries its output. */
async function startedOrKilled(child: CliProcess, what: string, ready: () => boolean | Promise<boolean>): Promise<void> {
  try {
    await waitFor(
      what,
      () => {
        if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}`);
        return ready();
      },
      START_TIMEOUT_MS,
    );
  } catch (error) {
    await kill(child);
    throw new Error(`${(error as Error).message}:\n${child.output().slice(-4000)}`);
  }
}

/** SIGKILL, and wait until it is gone. */
export async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.kill('SIGKILL');
  await exitOf(child);
}

/** Stops every child still running (SIGKILL: tests clean up, they do not test shutdown here). */
export async function killAll(): Promise<void> {
  await Promise.all([...running].map(kill));
}
