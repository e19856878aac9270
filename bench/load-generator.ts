import { Agent, request } from 'node:http';
import autocannon from 'autocannon';
import { buildPool, type PoolOptions, type PooledDelivery } from './deliveries.js';
import { percentiles, type Percentiles } from './stats.js';

/**
 * The load generator, run as its own process so its CPU is not the service's. `saturate` keeps
 * `connections` requests in flight (closed loop, autocannon): the most the target can acknowledge.
 * `paced` sends at a fixed offered rate whatever the answers (open loop) and measures each latency
 * from the moment the request was due, so a stalled server cannot hide its queue (no coordinated
 * omission).
 */
export interface LoadJob {
  url: string;
  mode: 'saturate' | 'paced';
  durationSec: number;
  connections: number;
  /** Paced mode: deliveries per second offered. */
  rate?: number;
  /** Saturate mode: send the pool once through (every delivery, duplicates included) instead of for durationSec. */
  once?: boolean;
  pool: PoolOptions;
}

export interface LoadResult {
  mode: LoadJob['mode'];
  offeredRate: number | null;
  startedAt: number;
  finishedAt: number;
  requests: number;
  acks: number;
  non2xx: number;
  errors: number;
  acksPerSec: number;
  latencyMs: Percentiles;
  /**
   * Paced mode: the p99 of the acknowledgements due in each second of the step, in order. A step's
   * p99 made by a few stalled seconds reads differently here from one made by a steady queue.
   */
  secondP99sMs: Array<number | null> | null;
  /**
   * Paced mode: how late the generator itself sent each request after it was due. It counts in each
   * latency (the delivery was due then), so a high figure here is the machine starving the
   * generator, not the target answering slowly.
   */
  sendLateMs: Percentiles | null;
  uniqueEvents: number;
  duplicatesInPool: number;
  /** The pool ran out and started again: later requests were duplicates beyond the planned share. */
  poolWrapped: boolean;
  /**
   * This process's own CPU per request, in ms: it runs on the cores the target uses, so every figure
   * of a step is read knowing what the generator took.
   */
  generatorCpuMsPerRequest: number | null;
}

interface Tally {
  acks: number;
  non2xx: number;
  errors: number;
  latencies: number[];
  /** Paced mode: the latencies of each second's due acknowledgements, and each send's lateness. */
  bySecond: number[][];
  sendLate: number[];
}

class Cursor {
  private index = 0;
  wrapped = false;

  constructor(private readonly deliveries: PooledDelivery[]) {}

  get length(): number {
    return this.deliveries.length;
  }

  next(): PooledDelivery {
    if (this.index === this.deliveries.length) {
      this.index = 0;
      this.wrapped = true;
    }
    return this.deliveries[this.index++]!;
  }
}

async function saturate(job: LoadJob, cursor: Cursor, tally: Tally): Promise<void> {
  const options: autocannon.Options = {
    url: job.url,
    connections: job.connections,
    ...(job.once ? { amount: cursor.length } : { duration: job.durationSec }),
    method: 'POST',
    requests: [
      {
        setupRequest: (req) => {
          const delivery = cursor.next();
          return { ...req, method: 'POST', path: delivery.path, headers: delivery.headers, body: delivery.body };
        },
      },
    ],
  };
  const result = await new Promise<autocannon.Result>((resolve, reject) => {
    const instance = autocannon(options, (error: Error | null, finished) => (error ? reject(error) : resolve(finished)));
    // autocannon's own histogram keeps whole milliseconds; the raw response times are kept instead.
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      if (statusCode >= 200 && statusCode < 300) {
        tally.acks++;
        tally.latencies.push(responseTime);
      } else tally.non2xx++;
    });
  });
  tally.errors += result.errors + result.timeouts;
}

async function paced(job: LoadJob, cursor: Cursor, tally: Tally): Promise<void> {
  const rate = job.rate ?? 1000;
  const total = Math.round(rate * job.durationSec);
  const agent = new Agent({ keepAlive: true, maxSockets: job.connections });
  const target = new URL(job.url);
  const start = performance.now();
  let sent = 0;
  let finished = 0;
  await new Promise<void>((resolve) => {
    const send = (dueAt: number) => {
      const delivery = cursor.next();
      tally.sendLate.push(performance.now() - dueAt);
      const second = (tally.bySecond[Math.floor((dueAt - start) / 1000)] ??= []);
      const req = request(
        { agent, host: target.hostname, port: target.port, method: 'POST', path: delivery.path, headers: { ...delivery.headers, 'content-length': delivery.body.length } },
        (res) => {
          res.resume();
          res.on('end', () => {
            if (res.statusCode !== undefined && res.statusCode >= 200 && res.statusCode < 300) {
              const latency = performance.now() - dueAt;
              tally.acks++;
              tally.latencies.push(latency);
              second.push(latency);
            } else tally.non2xx++;
            if (++finished === total) resolve();
          });
        },
      );
      req.on('error', () => {
        tally.errors++;
        if (++finished === total) resolve();
      });
      req.end(delivery.body);
    };
    const tick = () => {
      const due = Math.min(total, Math.floor(((performance.now() - start) / 1000) * rate) + 1);
      while (sent < due) send(start + (sent++ * 1000) / rate);
      if (sent < total) setTimeout(tick, 1);
    };
    tick();
  });
  agent.destroy();
}

export async function runLoad(job: LoadJob): Promise<LoadResult> {
  const pool = buildPool(job.pool);
  const cursor = new Cursor(pool.deliveries);
  const tally: Tally = { acks: 0, non2xx: 0, errors: 0, latencies: [], bySecond: [], sendLate: [] };
  const startedAt = Date.now();
  const cpuBefore = process.cpuUsage();
  await (job.mode === 'saturate' ? saturate(job, cursor, tally) : paced(job, cursor, tally));
  const finishedAt = Date.now();
  const cpu = process.cpuUsage(cpuBefore);
  const requests = tally.acks + tally.non2xx + tally.errors;
  return {
    mode: job.mode,
    offeredRate: job.mode === 'paced' ? (job.rate ?? null) : null,
    startedAt,
    finishedAt,
    requests,
    acks: tally.acks,
    non2xx: tally.non2xx,
    errors: tally.errors,
    acksPerSec: tally.acks / ((finishedAt - startedAt) / 1000),
    latencyMs: percentiles(tally.latencies),
    secondP99sMs: job.mode === 'paced' ? Array.from(tally.bySecond, (second) => percentiles(second ?? []).p99) : null,
    sendLateMs: job.mode === 'paced' ? percentiles(tally.sendLate) : null,
    uniqueEvents: pool.uniqueEvents,
    duplicatesInPool: pool.duplicates,
    poolWrapped: cursor.wrapped,
    generatorCpuMsPerRequest: requests === 0 ? null : Math.round((cpu.user + cpu.system) / requests) / 1000,
  };
}

// Run as a child process of the bench (fork): each job comes as a message and its result goes back as
// one; the process ends when the bench disconnects.
if (process.argv[1] === import.meta.filename) {
  process.on('message', (job: LoadJob) => void runLoad(job).then((result) => process.send!(result)));
}
