import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis, type RedisOptions } from 'ioredis';
import type { Logger } from 'pino';
import type { EventConsumer, EventQueue } from './queue.js';

export interface RedisStreamsOptions {
  url: string;
  /** The stream key; every receiver and worker of one deployment uses the same one. */
  stream: string;
  /** This process in the consumer group (the same name as its lease owner). */
  consumer: string;
  /** An entry pending this long on a consumer is taken over by another one (the processing lease). */
  claimIdleMs: number;
  /** How often a worker looks for such entries. */
  reclaimIntervalMs: number;
  logger: Logger;
}

/** Sleeps, or less when `signal` aborts. */
const pause = (ms: number, signal: AbortSignal) => sleep(ms, undefined, { signal }).catch(() => undefined);

type StreamEntry = [entryId: string, fields: string[] | null];

const GROUP = 'webhook-inbox-workers';
const FIELD = 'event';
/** Acknowledged entries stay in the stream until trimmed; ~100 bytes each, so this keeps it ~10 MB. */
const STREAM_MAX_LENGTH = 100_000;
const READ_BLOCK_MS = 2000;
const RETRY_PAUSE_MS = 500;
/** A publish never waits longer than this for Redis (it is not awaited by the acknowledgement anyway). */
const COMMAND_TIMEOUT_MS = 1000;

/**
 * No offline queue and no resending: a command either goes out on a live connection or fails at
 * once, so an unreachable Redis costs nothing and nothing piles up in memory. Reconnects are quick,
 * so a restarted Redis is used again within a second.
 */
const CONNECTION_OPTIONS: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  connectTimeout: COMMAND_TIMEOUT_MS,
  retryStrategy: (attempt) => Math.min(attempt * 100, 1000),
};

/**
 * Redis Streams transport: receivers XADD "event X is ready"; worker processes read it through one
 * consumer group (XREADGROUP), so each entry goes to one worker, acknowledge it (XACK) once the attempt
 * is over, and take over (XAUTOCLAIM) entries left pending by a consumer that died. A flushed or
 * restarted Redis loses only announcements: the group is created again and the sweeper finds the
 * events.
 */
export class RedisStreamsQueue implements EventQueue {
  readonly transport = 'redis-streams';
  private readonly commands: Redis;
  private reading: { reader: Redis; stop: AbortController; stopped: Promise<unknown>; loops: Promise<unknown> } | undefined;
  private reclaimCursor = '0-0';

  constructor(private readonly options: RedisStreamsOptions) {
    this.commands = this.connect('commands', { commandTimeout: COMMAND_TIMEOUT_MS });
  }

  publish(id: number): void {
    this.commands
      .xadd(this.options.stream, 'MAXLEN', '~', STREAM_MAX_LENGTH, '*', FIELD, String(id))
      .catch((error: unknown) => this.options.logger.debug({ err: error, id }, 'event not announced on the stream; the sweeper will find it'));
  }

  consume(workers: EventConsumer): void {
    // Blocking reads get a connection of their own, so acknowledgements never wait behind them.
    const reader = this.connect('consumer', { blockingTimeout: READ_BLOCK_MS });
    const stop = new AbortController();
    const stopped = once(stop.signal, 'abort');
    const loops = Promise.all([this.readLoop(reader, workers, stop.signal), this.reclaimLoop(workers, stop.signal)]);
    this.reading = { reader, stop, stopped, loops };
  }

  async stopConsuming(): Promise<void> {
    if (!this.reading || this.reading.stop.signal.aborted) return;
    this.reading.stop.abort();
    this.reading.reader.disconnect();
    await this.reading.loops;
  }

  async close(): Promise<void> {
    if (this.reading) await this.leaveGroup();
    await this.commands.quit().catch(() => this.commands.disconnect());
  }

  private async readLoop(reader: Redis, workers: EventConsumer, stopped: AbortSignal): Promise<void> {
    const { stream, consumer } = this.options;
    while (await this.untilFree(workers, stopped)) {
      try {
        const reply = await reader.xreadgroup('GROUP', GROUP, consumer, 'COUNT', workers.freeSlots, 'BLOCK', READ_BLOCK_MS, 'STREAMS', stream, '>');
        for (const [, entries] of (reply ?? []) as Array<[string, StreamEntry[]]>) this.dispatch(workers, entries);
      } catch (error) {
        if (stopped.aborted) return;
        if (String(error).includes('NOGROUP')) await this.createGroup(stopped);
        else await pause(RETRY_PAUSE_MS, stopped);
      }
    }
  }

  /** Waits for a free worker; false once consuming stopped. */
  private async untilFree(workers: EventConsumer, stopped: AbortSignal): Promise<boolean> {
    await Promise.race([workers.whenFree(), this.reading?.stopped]);
    return !stopped.aborted && workers.freeSlots > 0;
  }

  private async reclaimLoop(workers: EventConsumer, stopped: AbortSignal): Promise<void> {
    const { stream, consumer, claimIdleMs, reclaimIntervalMs } = this.options;
    while (!stopped.aborted) {
      await pause(reclaimIntervalMs, stopped);
      if (stopped.aborted || workers.freeSlots <= 0) continue;
      try {
        const [cursor, entries] = (await this.commands.xautoclaim(stream, GROUP, consumer, claimIdleMs, this.reclaimCursor, 'COUNT', workers.freeSlots)) as [string, StreamEntry[]];
        this.reclaimCursor = cursor;
        if (entries.length > 0) this.options.logger.info({ entries: entries.length }, 'took over stream entries left pending by another consumer');
        this.dispatch(workers, entries);
      } catch (error) {
        this.options.logger.debug({ err: error }, 'could not look for abandoned stream entries');
      }
    }
  }

  /** Each entry is acknowledged once an attempt on its event is over, whatever the attempt's result. */
  private dispatch(workers: EventConsumer, entries: StreamEntry[]): void {
    for (const [entryId, fields] of entries) {
      const id = Number(fields?.[fields.indexOf(FIELD) + 1]);
      const acknowledge = () => void this.commands.xack(this.options.stream, GROUP, entryId).catch(() => undefined);
      if (Number.isSafeInteger(id) && id > 0) workers.enqueue(id, acknowledge);
      else {
        this.options.logger.warn({ entryId }, 'stream entry without an event id; dropped');
        acknowledge();
      }
    }
  }

  /**
   * From the start of the stream: after a flush, receivers may have re-created the stream with new
   * entries before any worker re-created the group. Replaying older entries is harmless (a processed
   * event is not claimed again).
   */
  private async createGroup(stopped: AbortSignal): Promise<void> {
    try {
      await this.commands.xgroup('CREATE', this.options.stream, GROUP, '0', 'MKSTREAM');
      this.options.logger.info({ stream: this.options.stream }, 'stream consumer group created');
    } catch (error) {
      if (!String(error).includes('BUSYGROUP')) await pause(RETRY_PAUSE_MS, stopped);
    }
  }

  /** Leaves the group tidy on a clean stop; entries still pending stay for another consumer. */
  private async leaveGroup(): Promise<void> {
    const { stream, consumer } = this.options;
    try {
      const pending = await this.commands.xpending(stream, GROUP, '-', '+', 1, consumer);
      if (pending.length === 0) await this.commands.xgroup('DELCONSUMER', stream, GROUP, consumer);
    } catch (error) {
      this.options.logger.debug({ err: error }, 'could not leave the stream consumer group');
    }
  }

  /** Logs when Redis goes away and comes back, once each, not on every reconnect attempt. */
  private connect(role: string, options: RedisOptions): Redis {
    const redis = new Redis(this.options.url, { ...CONNECTION_OPTIONS, ...options, connectionName: `webhook-inbox:${role}` });
    const log = this.options.logger;
    let down = false;
    redis.on('error', (error: Error) => {
      if (!down) log.warn({ err: error, role }, 'redis unavailable; events are picked up by the sweeper meanwhile');
      down = true;
    });
    redis.on('ready', () => {
      if (down) log.info({ role }, 'redis reachable again');
      down = false;
    });
    return redis;
  }
}
