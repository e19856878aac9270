import type { FastifyInstance } from 'fastify';
import type { Config } from '../config/settings.js';
import type { Inbox } from '../inbox.js';
import type { ScheduledOperations } from '../ops/schedule.js';
import { listen } from './listen.js';

/** Workers that process a service's events outside its inbox: the workers' thread of `serve` (WORKER_THREAD). */
export interface WorkersElsewhere {
  /** `inbox`: the request thread's, whose deliveries and metrics the workers share. */
  start(inbox: Inbox): void;
  /** Lets the workers finish their events for up to `timeoutMs`. */
  stop(timeoutMs: number): Promise<void>;
}

/** What a service is made of; a part a process does not run is null. */
export interface ServiceParts {
  /** Where the listeners listen (HOST, PORT, MANAGEMENT_HOST, MANAGEMENT_PORT). */
  config: Config;
  inbox: Inbox;
  /** The webhook listener; null in `webhook-inbox worker`. */
  webhooks: FastifyInstance | null;
  /** The management listener; null unless MANAGEMENT_PORT is set. */
  management: FastifyInstance | null;
  /**
   * Who processes the events: `'inbox'`, the inbox's own workers, which start() starts; workers
   * elsewhere (the workers' thread); or null: other processes (`serve --no-workers`), or the caller,
   * who starts the inbox's workers itself (createServers).
   */
  processing: 'inbox' | WorkersElsewhere | null;
  /** Starts the scheduled jobs (they run from then on). */
  schedule: (() => ScheduledOperations) | null;
  /** This process's bulk replays (the dashboard's): each stops after the event in hand. */
  bulkReplays: { stop(): Promise<void> } | null;
  /** The per-minute delivery counts, written to the database every few seconds and once more at stop. */
  statistics: { start(): void; stop(): Promise<void> } | null;
}

/**
 * A running service: its parts started together and stopped in one order (see stop). The CLI's
 * `serve` and `worker` are each one (createService), and so is what createApp and createServers return,
 * whose webhook server's close() runs the same order.
 */
export class Service {
  readonly inbox: Inbox;
  readonly webhooks: FastifyInstance | null;
  readonly management: FastifyInstance | null;
  private operations: ScheduledOperations | null = null;
  private stopped: Promise<void> | null = null;
  private stoppedBehindWebhooks: Promise<void> | null = null;

  constructor(private readonly parts: ServiceParts) {
    ({ inbox: this.inbox, webhooks: this.webhooks, management: this.management } = parts);
  }

  /** Starts the background parts: the workers (wherever they run), the scheduled jobs and the delivery counts. The listeners wait for listen(). */
  start(): void {
    const { processing, inbox, schedule, statistics } = this.parts;
    if (processing === 'inbox') inbox.start();
    else processing?.start(inbox);
    this.operations = schedule?.() ?? null;
    statistics?.start();
  }

  /** Opens the listeners; one that cannot listen is an error naming its variables (stop() then stops the rest). */
  async listen(): Promise<void> {
    await listen(this.parts.config, this, this.inbox.logger);
  }

  /**
   * Stops the service, each step once the one before has finished:
   *
   * 1. the webhook listener takes no new delivery and answers those it has, so each is recorded and
   *    announced, or refused, before anything it needs stops;
   * 2. the management listener does the same, its routes reading a store still open;
   * 3. the scheduled jobs and this process's bulk replays stop after the run or event in hand, so
   *    they start no attempt the workers would have to wait for;
   * 4. the workers (or the workers' thread) and the outbox dispatcher stop taking work and finish
   *    what they hold for up to `timeoutMs`; the workers then give back the leases of the events
   *    still running, for other processes to take at once;
   * 5. the last delivery counts are written;
   * 6. the queue closes (a publisher first hands on what it still holds);
   * 7. the store closes.
   *
   * Calling it again waits for the same stop.
   */
  stop(timeoutMs: number): Promise<void> {
    this.stopped ??= (async () => {
      await this.webhooks?.close();
      await this.stopBehindWebhooks(timeoutMs);
    })();
    return this.stopped;
  }

  /**
   * Steps 2 to 7 of stop(), for a webhook server whose own close() has done step 1: createApp and
   * createServers run it from the server's onClose hook. Runs once.
   */
  stopBehindWebhooks(timeoutMs: number): Promise<void> {
    this.stoppedBehindWebhooks ??= this.stopInOrder(timeoutMs);
    return this.stoppedBehindWebhooks;
  }

  private async stopInOrder(timeoutMs: number): Promise<void> {
    const { management, processing, inbox, bulkReplays, statistics } = this.parts;
    await management?.close();
    await Promise.all([this.operations?.stop(), bulkReplays?.stop()]);
    const elsewhere = processing === 'inbox' ? null : processing;
    // The inbox's own workers stop whoever started them (createServers leaves that to its caller).
    await Promise.all([elsewhere?.stop(timeoutMs), inbox.stopWorkers(timeoutMs)]);
    await statistics?.stop();
    await inbox.closeQueue();
    await inbox.store.close();
  }
}
