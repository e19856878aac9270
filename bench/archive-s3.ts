import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Command, Option } from 'commander';
import S3rver from 's3rver';
import { positiveIntegerOption } from '../src/cli/context.js';
import { createBenchDatabase, DEFAULT_SERVERS, fillHistory } from './database.js';
import { buildService } from './targets.js';

const ROOT = resolve(import.meta.dirname, '..');
const BUCKET = 'bench-archive';

/**
 * Archive throughput to an S3-compatible store: fills a bench database with processed events (the
 * history rows of bench/database.ts), starts s3rver in this process, and runs the compiled
 * `webhook-inbox archive --to s3://...` in a process of its own, which reports its peak resident set
 * at exit (bench/peak-rss.mjs). Prints events/s and that peak.
 *
 *   npm run bench:archive-s3 -- --events 200000 --store sqlite
 */
const program = new Command()
  .option('--events <n>', 'processed events to archive', positiveIntegerOption, 100_000)
  .addOption(new Option('--store <store>', 'the database the events are in').choices(['sqlite', 'mysql']).default('sqlite'))
  .option('--events-per-file <n>', "the archive command's --events-per-file", positiveIntegerOption, 2000)
  .parse();
const options = program.opts<{ events: number; store: 'sqlite' | 'mysql'; eventsPerFile: number }>();

const work = await mkdtemp(join(tmpdir(), 'wi-bench-archive-'));
const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: join(work, 's3'), configureBuckets: [{ name: BUCKET }] });
try {
  await buildService();
  const database = await createBenchDatabase(options.store, DEFAULT_SERVERS, work);
  try {
    await fillHistory(database, options.events, 0);
    const { port } = await server.run();
    const result = await archive(database.url, `http://127.0.0.1:${port}`, options.eventsPerFile);
    const rate = Math.round((result.archived * 1000) / result.elapsedMs);
    console.log(
      `archived ${result.archived} events (${options.store}) to s3rver in ${result.elapsedMs} ms: ${rate} events/s, ` +
        `${result.files} files, peak RSS of the archive process ${Math.round(result.peakRssKib / 1024)} MiB`,
    );
  } finally {
    await database.drop();
  }
} finally {
  await server.close().catch(() => undefined);
  await rm(work, { recursive: true, force: true });
}

async function archive(databaseUrl: string, endpoint: string, eventsPerFile: number): Promise<{ archived: number; elapsedMs: number; files: number; peakRssKib: number }> {
  const args = ['--import', join(ROOT, 'bench/peak-rss.mjs'), join(ROOT, 'bin/webhook-inbox.js')];
  args.push('archive', '--to', `s3://${BUCKET}/events`, '--older-than', '1d', '--events-per-file', String(eventsPerFile), '--json');
  const env = {
    PATH: process.env.PATH ?? '',
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'warn',
    S3_ENDPOINT: endpoint,
    S3_FORCE_PATH_STYLE: 'true',
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
    AWS_EC2_METADATA_DISABLED: 'true',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  };
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const code = await new Promise<number | null>((done) => child.on('exit', done));
  if (code !== 0) throw new Error(`archive exited with ${code}: ${stderr}${stdout}`);
  const report = JSON.parse(stdout) as { archived: number; elapsedMs: number; parts: unknown[] };
  const peak = /peak-rss-kib (\d+)/.exec(stderr);
  return { archived: report.archived, elapsedMs: report.elapsedMs, files: report.parts.length, peakRssKib: Number(peak?.[1] ?? 0) };
}
