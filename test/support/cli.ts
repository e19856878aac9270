import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { resolve } from 'node:path';

/**
 * The CLI as the tests run it: the TypeScript sources through tsx, so a test never runs a stale dist/.
 * The compiled bin (bin/webhook-inbox.js) is tested from the packed tarball (test/package/). tsx is named
 * by its resolved path, so that a command run in another working directory still finds it.
 */
export const CLI_ARGS = ['--import', import.meta.resolve('tsx'), resolve(import.meta.dirname, '../../src/cli/main.ts')];

export type CliProcess = ChildProcess & { output: () => string; stdout: NonNullable<ChildProcess['stdout']> };

/** Starts `webhook-inbox <args>` with only PATH and `env` in its environment; output collects both streams. */
export function runCli(args: string[], env: Record<string, string>, cwd?: string): CliProcess {
  const child = spawn(process.execPath, [...CLI_ARGS, ...args], { cwd, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return Object.assign(child, { output: () => output });
}

export async function exitOf(child: ChildProcess): Promise<number | null> {
  if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
  const [code] = (await once(child, 'exit')) as [number | null];
  return code;
}

/** Runs a command to its end: exit code and everything it printed. */
export async function cli(args: string[], env: Record<string, string>, cwd?: string): Promise<{ code: number | null; output: string }> {
  const child = runCli(args, env, cwd);
  const code = await exitOf(child);
  return { code, output: child.output() };
}
