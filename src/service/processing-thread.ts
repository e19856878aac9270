import { once } from 'node:events';
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { isMainThread, parentPort, resourceLimits, Worker, workerData, type MessagePort } from 'node:worker_threads';
import type { Logger } from 'pino';
import { startWorkers } from '../app.js';
import type { Config } from '../config/settings.js';
import { describeError } from '../errors.js';
import { createLogger, flushed } from '../observability/logger.js';
import type { Inbox } from '../inbox.js';
import { RelayedMetrics, replayCalls, type RelayedCalls } from '../observability/relayed-metrics.js';
import { MessagePortConsumer, MessagePortPublisher, type AnnouncedIds } from '../queue/message-port.js';
import { RequestLoad, type OverloadThresholds } from '../processing/request-load.js';
import type { WorkersElsewhere } from './service.js';
import { serviceDomains } from './domains.js';

/** Marks a thread started as the workers' thread (workerData), so importing this module elsewhere runs nothing. */
const ROLE = 'webhook-inbox workers';

interface ThreadData {
  role: typeof ROLE;
  config: Config;
  /** The request thread's RequestLoad, shared. */
  requestLoad: SharedArrayBuffer;
}

type ToThread = AnnouncedIds | { kind: 'stop'; timeoutMs: number };

/** A thread that died is started again after this: its events wait in the database meanwhile. */
const RESTART_DELAY_MS = 1000;

/** Beyond this many ids announced while the thread is down, the sweeper finds the rest. */
const MAX_UNDELIVERED_IDS = 100_000;

/**
 * The young generation of the workers' thread, where each batch's short-lived rows and statements are
 * made. The thread is a second V8 heap in the process, and V8 would let its young generation grow as
 * large as the request thread's: the two together are much of the process's peak RSS. A small one
 * costs only more frequent scavenges, each short, in a thread that yields the cores anyway
 * (docs/performance.md#memory).
 */
const WORKERS_YOUNG_GENERATION_MB = 8;

/** How long past the shutdown timeout a stopping thread is waited for before it is terminated. */
const STOP_MARGIN_MS = 2000;

/** What the workers' thread needs of the request thread's inbox. */
type RequestThreadInbox = Pick<Inbox, 'metrics' | 'logger' | 'deliveriesInFlight'>;

/**
 * How often the request thread's load is measured: long enough to smooth single requests,
 * short enough that a yield ends soon after the load falls (it holds processing back for at most this).
 */
const LOAD_INTERVAL_MS = 250;

/**
 * The background workers of `serve`, in a thread of their own (WORKER_THREAD): they claim, apply and
 * complete on a second core while the request thread only verifies, records and answers, and at a
 * lower CPU priority (WORKER_NICE), so when the cores are short the kernel runs the acknowledgements
 * first and processing takes what they leave. The priority does not reach the database server, where
 * processing's statements compete with the records as equals: so while deliveries queue at a busy
 * request thread (WORKER_YIELD_ELU, WORKER_YIELD_IN_FLIGHT), the workers also run no more than
 * WORKER_YIELD_CONCURRENCY events at a time. The thread runs the same inbox a `webhook-inbox worker`
 * process does, on its own connections; recorded events reach it over a message port (or Redis), and
 * its metrics come back to be scraped with the request thread's.
 */
export class ProcessingThread implements WorkersElsewhere {
  /** Where the request thread announces recorded events; undefined when Redis carries them. */
  readonly publisher: MessagePortPublisher | undefined;
  private worker: Worker | null = null;
  private stopping = false;
  /** Ids announced while the thread was down, for the one that replaces it (up to a bound). */
  private undelivered: number[] = [];
  private readonly requestLoad: RequestLoad;
  private stopMeasuring: (() => void) | null = null;

  constructor(private readonly config: Config) {
    this.publisher = config.redis ? undefined : new MessagePortPublisher((message) => this.announce(message));
    this.requestLoad = RequestLoad.shared(overloadThresholds(config));
  }

  /**
   * `inbox`: the request thread's, whose deliveries in flight are measured and whose metrics count the
   * thread's calls too.
   */
  start(inbox: RequestThreadInbox): void {
    // The workers' thread yields while the same figures read overloaded (runThread).
    if (yields(this.config)) {
      this.stopMeasuring = this.requestLoad.measure(LOAD_INTERVAL_MS, inbox.deliveriesInFlight, (seconds) => inbox.metrics.workersYielded?.(seconds));
    }
    this.worker = this.spawn(inbox);
  }

  /** Lets the thread finish in-flight events for up to `timeoutMs` (as `worker` does on SIGTERM). */
  async stop(timeoutMs: number): Promise<void> {
    this.stopping = true;
    this.stopMeasuring?.();
    const worker = this.worker;
    if (!worker) return;
    // What the request thread announced reaches the thread before it is told to stop.
    await this.publisher?.close();
    const exited = once(worker, 'exit');
    worker.postMessage({ kind: 'stop', timeoutMs } satisfies ToThread);
    const forced = setTimeout(() => void worker.terminate(), timeoutMs + STOP_MARGIN_MS);
    await exited;
    clearTimeout(forced);
  }

  private announce(message: AnnouncedIds): void {
    if (this.worker) this.worker.postMessage(message);
    else if (this.undelivered.length + message.ids.length <= MAX_UNDELIVERED_IDS) this.undelivered.push(...message.ids);
  }

  private spawn(inbox: RequestThreadInbox): Worker {
    const data: ThreadData = { role: ROLE, config: this.config, requestLoad: this.requestLoad.buffer };
    const [entry, evaluated] = threadEntry();
    const worker = new Worker(entry, { eval: evaluated, workerData: data, name: ROLE, resourceLimits: { maxYoungGenerationSizeMb: WORKERS_YOUNG_GENERATION_MB } });
    if (this.undelivered.length > 0) worker.postMessage({ kind: 'announced', ids: this.undelivered } satisfies AnnouncedIds);
    this.undelivered = [];
    worker.on('message', (message: RelayedCalls) => {
      if (message.kind === 'metrics') replayCalls(inbox.metrics, message.calls);
    });
    worker.on('error', (error) => inbox.logger.error({ err: error }, "the workers' thread failed"));
    worker.on('exit', (code) => {
      if (this.stopping) return;
      this.worker = null;
      inbox.logger.error({ code }, `the workers' thread exited; it starts again in ${RESTART_DELAY_MS} ms, and its events wait in the database meanwhile`);
      setTimeout(() => {
        if (!this.stopping) this.worker = this.spawn(inbox);
      }, RESTART_DELAY_MS).unref();
    });
    return worker;
  }
}

/**
 * This module as a thread's entry. Run from its TypeScript source (tests, `tsx`), the thread must load
 * tsx itself: a worker does not inherit the `--import tsx` hooks on Node 20.
 */
function threadEntry(): [entry: string | URL, evaluated: boolean] {
  const self = import.meta.url;
  if (!self.endsWith('.ts')) return [new URL(self), false];
  // Resolved here, not in the thread: an evaluated script resolves from the working directory, which need not hold tsx.
  const tsx = import.meta.resolve('tsx/esm/api');
  return [`import(${JSON.stringify(tsx)}).then(({ register }) => register()).then(() => import(${JSON.stringify(self)}))`, true];
}

/** In the thread: the workers, fed by the port, until the request thread says stop. */
async function runThread({ config, requestLoad }: ThreadData, port: MessagePort): Promise<void> {
  const logger = createLogger(config.logLevel).child({ thread: 'workers' });
  lowerPriority(config.processing.thread.nice, logger);
  logger.info({ nice: config.processing.thread.nice, youngGenerationMb: resourceLimits.maxYoungGenerationSizeMb }, "the workers' thread started");
  const metrics = new RelayedMetrics((message) => port.postMessage(message));
  const queue = config.redis ? undefined : new MessagePortConsumer(port);
  // The request thread has applied the migrations already. A stop that comes while the workers start
  // waits for them, rather than being missed and left to the request thread's terminate().
  const load = new RequestLoad(requestLoad, overloadThresholds(config));
  const yieldWhile = yields(config) ? () => load.overloaded : undefined;
  const starting = startWorkers({ ...config, migrateOnStart: false }, { logger, metrics, queue, yieldWhile, domains: serviceDomains(config) });
  port.on('message', (message: ToThread) => {
    if (message.kind !== 'stop') return;
    void starting
      .then((inbox) => inbox.stop(message.timeoutMs))
      .then(
        () => {
          metrics.flush();
          return 0;
        },
        (error: unknown) => {
          logger.error({ err: error }, "error while stopping the workers' thread");
          return 1;
        },
      )
      // pino writes a thread's buffered lines at exit only in the main thread.
      .then(async (code) => {
        await flushed(logger);
        process.exit(code);
      });
  });
  // A failure to start fails the thread, which the request thread logs and starts again.
  await starting;
}

/** Whether the workers yield to an overloaded request thread at all (WORKER_YIELD_ELU below 1). */
function yields(config: Config): boolean {
  return config.processing.thread.yieldUtilisation < 1;
}

function overloadThresholds({ processing: { thread } }: Config): OverloadThresholds {
  return { utilisation: thread.yieldUtilisation, inFlight: thread.yieldInFlight };
}

/**
 * Gives this thread, alone, the nice value `nice`. Linux keeps one per thread, and setpriority with a
 * thread's id sets only that thread's; elsewhere it would set the whole process's, so it is left.
 */
function lowerPriority(nice: number, logger: Logger): void {
  if (nice === 0) return;
  if (process.platform !== 'linux') {
    logger.info({ nice }, 'WORKER_NICE applies on Linux only; the workers run at the priority of the process');
    return;
  }
  try {
    const threadId = Number(readlinkSync('/proc/thread-self').split('/').pop());
    setPriority(threadId, nice);
  } catch (error) {
    logger.warn(`WORKER_NICE: cannot lower the workers' priority (${describeError(error)}); they run at the priority of the process`);
  }
}

if (!isMainThread && (workerData as Partial<ThreadData> | null)?.role === ROLE) await runThread(workerData as ThreadData, parentPort!);
