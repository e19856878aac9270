import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Command } from 'commander';
import { positiveIntegerOption } from '../src/cli/context.js';
import { createBenchDatabase, DEFAULT_SERVERS } from './database.js';
import { percentiles, type Percentiles } from './stats.js';
import { buildService, startTarget, TARGETS, type RunningTarget } from './targets.js';
import { stripeDelivery, stripePaymentEvent } from '../test/support/signing.js';

/**
 * Unsigned bodies that cost a parser its depth (`{"a":[[[...]]]}`), sent all at once to an endpoint,
 * while valid Stripe deliveries come at a steady pace: how long the service's event loop stalled
 * (a preloaded probe, bench/event-loop-probe.mjs) and how long the valid deliveries waited, against
 * the same pace without the flood. Issue 27, item 3.
 *
 *   npm run bench:hostile -- [--store sqlite|mysql] [--bodies 16] [--bytes 1048576] [--path /webhooks/payu]
 */
const ROOT = resolve(import.meta.dirname, '..');

const options = new Command()
  .name('npm run bench:hostile --')
  .option('--store <store>', 'sqlite or mysql', 'sqlite')
  .option('--mysql-url <url>', 'MariaDB server for --store mysql', DEFAULT_SERVERS.mysqlUrl)
  .option('--bodies <n>', 'hostile bodies sent at once', positiveIntegerOption, 16)
  .option('--bytes <n>', 'size of each hostile body', positiveIntegerOption, 1 << 20)
  .option('--path <path>', 'where the hostile bodies go', '/webhooks/payu')
  .option('--content-type <type>', 'their Content-Type', 'application/json')
  .option('--rate <n>', 'valid deliveries per second, before and during the flood', positiveIntegerOption, 50)
  .option('--seconds <n>', 'length of each phase', positiveIntegerOption, 5)
  .parse()
  .opts<{ store: 'sqlite' | 'mysql'; mysqlUrl: string; bodies: number; bytes: number; path: string; contentType: string; rate: number; seconds: number }>();

interface Phase {
  validMs: Percentiles;
  validRefused: number;
  eventLoop: { maxMs: number; p99Ms: number; meanMs: number };
}

const workDir = mkdtempSync(join(tmpdir(), 'wi-hostile-'));
const probeFile = join(workDir, 'event-loop.jsonl');
let sent = 0;

/** Valid deliveries at `rate` for `seconds`, each timed from its send to its answer. */
async function validPace(target: RunningTarget, seconds: number): Promise<{ latencies: number[]; refused: number }> {
  const latencies: number[] = [];
  let refused = 0;
  const pending: Array<Promise<void>> = [];
  const every = 1000 / options.rate;
  const start = performance.now();
  for (let i = 0; i < seconds * options.rate; i++) {
    const due = start + i * every;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, due - performance.now())));
    const n = sent++;
    const delivery = stripeDelivery(stripePaymentEvent(`evt_hostile_bench_${process.pid}_${n}`, 'payment_intent.succeeded', `pi_hostile_bench_${n}`));
    const sentAt = performance.now();
    pending.push(
      fetch(`${target.url}/webhooks/stripe`, { method: 'POST', headers: delivery.headers, body: delivery.body }).then(
        async (response) => {
          await response.arrayBuffer();
          latencies.push(performance.now() - sentAt);
          if (response.status !== 200) refused++;
        },
        () => void refused++,
      ),
    );
  }
  await Promise.all(pending);
  return { latencies, refused };
}

/** The event-loop delay of the target since the previous call. */
async function probe(target: RunningTarget): Promise<Phase['eventLoop']> {
  const before = readProbe().length;
  process.kill(target.pid, 'SIGUSR2');
  for (let waited = 0; readProbe().length === before; waited++) {
    if (waited === 100) throw new Error('the event-loop probe did not answer within 2 s');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return readProbe().at(-1)!;
}

function readProbe(): Array<Phase['eventLoop']> {
  try {
    return readFileSync(probeFile, 'utf8')
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as Phase['eventLoop']);
  } catch {
    return [];
  }
}

const hostileBody = `{"a":${'['.repeat((options.bytes - 7) >> 1)}${']'.repeat((options.bytes - 7) >> 1)}}`;

async function main(): Promise<void> {
  await buildService();
  const database = await createBenchDatabase(options.store, { ...DEFAULT_SERVERS, mysqlUrl: options.mysqlUrl }, workDir);
  const target = await startTarget({ ...TARGETS.background!, store: options.store }, database.url, workDir, {
    nodeArgs: ['--import', join(ROOT, 'bench/event-loop-probe.mjs')],
    env: { EVENT_LOOP_PROBE_FILE: probeFile, LOG_LEVEL: 'warn' },
  });
  try {
    await validPace(target, 1);
    await probe(target);
    const quiet = await validPace(target, options.seconds);
    const quietLoop = await probe(target);

    const flood = validPace(target, options.seconds);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const hostileStarted = performance.now();
    const hostile = await Promise.all(
      Array.from({ length: options.bodies }, async () => {
        try {
          const response = await fetch(`${target.url}${options.path}`, { method: 'POST', headers: { 'content-type': options.contentType }, body: hostileBody });
          await response.arrayBuffer();
          return String(response.status);
        } catch (error) {
          return `error ${(error as { cause?: { code?: string } }).cause?.code ?? (error as Error).message}`;
        }
      }),
    );
    const hostileMs = Math.round(performance.now() - hostileStarted);
    const during = await flood;
    const floodLoop = await probe(target);

    const answers = Object.entries(hostile.reduce<Record<string, number>>((counts, answer) => ({ ...counts, [answer]: (counts[answer] ?? 0) + 1 }), {}));
    const describe = (name: string, phase: Phase) =>
      `${name}: event loop max ${phase.eventLoop.maxMs} ms (p99 ${phase.eventLoop.p99Ms} ms); valid deliveries p50 ${phase.validMs.p50} / p99 ${phase.validMs.p99} / max ${phase.validMs.max} ms, ${phase.validRefused} refused`;
    console.log(`${options.bodies} x ${options.bytes} bytes to ${options.path} (${options.contentType}), ${options.store}, valid Stripe deliveries at ${options.rate}/s:`);
    console.log(describe('  quiet', { validMs: percentiles(quiet.latencies), validRefused: quiet.refused, eventLoop: quietLoop }));
    console.log(describe('  flood', { validMs: percentiles(during.latencies), validRefused: during.refused, eventLoop: floodLoop }));
    console.log(`  hostile bodies answered ${answers.map(([answer, count]) => `${count} x ${answer}`).join(', ')} within ${hostileMs} ms`);
  } finally {
    await target.stop();
    await database.drop();
    rmSync(workDir, { recursive: true, force: true });
  }
}

await main();
