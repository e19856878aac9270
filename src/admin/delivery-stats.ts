import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { toDbTime, type InboxDatabase } from '../db/schema.js';
import type { DeliveryResult, InboxMetrics } from '../observability/metrics.js';

/** How often each process adds its counts to the shared tables. */
export const STATS_FLUSH_MS = 5000;
/** Slots in the rejected_deliveries ring: the most recent rejections kept, whatever the flood. */
export const REJECTION_RING_SLOTS = 1000;
/** Rejections remembered between flushes; past this a flood is counted (delivery_stats) but not itemised. */
const REJECTIONS_PER_FLUSH = 100;

/** A refused delivery as the admin shows it: never its body or signature. */
export interface Rejection {
  provider: string;
  statusCode: number;
  reason: string;
  remoteAddress: string | null;
  bodyBytes: number | null;
}

/** What needs attention now, as the overview samples it once a minute. */
export interface PipelineSample {
  due: number;
  oldestPendingSeconds: number | null;
  failed: number;
  stuck: number;
  outboxFailed: number;
}

interface MinuteCounts {
  minute: string;
  provider: string;
  result: DeliveryResult;
  deliveries: number;
  ackMsTotal: number;
  ackMsMax: number;
}

const minuteOf = (time: Date) => toDbTime(new Date(time.getTime() - (time.getTime() % 60_000)));

/**
 * Counts deliveries per minute, provider and result in memory, beside the metrics it wraps, and adds
 * them to `delivery_stats` every few seconds, so the overview sums every process. The answer path
 * only touches a map; rejections go to a fixed ring of rows, so a forged flood cannot grow a table.
 */
export class DeliveryStatsRecorder implements InboxMetrics {
  private counts = new Map<string, MinuteCounts>();
  private rejections: Rejection[] = [];
  private nextSlot = Math.floor(Math.random() * REJECTION_RING_SLOTS);
  private timer: NodeJS.Timeout | null = null;
  private flushing: Promise<void> = Promise.resolve();
  private sampledMinute: string | null = null;

  constructor(
    private readonly inner: InboxMetrics,
    private readonly db: Kysely<InboxDatabase>,
    private readonly clock: Clock,
    private readonly logger: Logger,
    /** Read once a minute for pipeline_samples; the first process to write a minute's sample wins. */
    private readonly sample: () => Promise<PipelineSample>,
  ) {}

  private async writeSample(): Promise<void> {
    const minute = minuteOf(this.clock.now());
    if (minute === this.sampledMinute) return;
    this.sampledMinute = minute;
    const exists = await this.db.selectFrom('pipeline_samples').select('id').where('minute', '=', minute).executeTakeFirst();
    if (exists) return;
    const sample = await this.sample();
    await this.db
      .insertInto('pipeline_samples')
      .orIgnore()
      .values({ minute, due: sample.due, oldest_pending_seconds: sample.oldestPendingSeconds, failed: sample.failed, stuck: sample.stuck, outbox_failed: sample.outboxFailed })
      .execute();
  }

  deliveryAnswered(provider: string, result: DeliveryResult, seconds: number): void {
    this.inner.deliveryAnswered(provider, result, seconds);
    const minute = minuteOf(this.clock.now());
    const key = `${minute}|${provider}|${result}`;
    const entry = this.counts.get(key) ?? { minute, provider, result, deliveries: 0, ackMsTotal: 0, ackMsMax: 0 };
    const ms = Math.round(seconds * 1000);
    entry.deliveries++;
    entry.ackMsTotal += ms;
    entry.ackMsMax = Math.max(entry.ackMsMax, ms);
    this.counts.set(key, entry);
  }

  rejected(rejection: Rejection): void {
    if (this.rejections.length < REJECTIONS_PER_FLUSH) this.rejections.push(rejection);
  }

  leaseTakenOver(provider: string): void {
    this.inner.leaseTakenOver(provider);
  }

  attemptFinished(attempt: Parameters<InboxMetrics['attemptFinished']>[0]): void {
    this.inner.attemptFinished(attempt);
  }

  eventProcessed(event: Parameters<InboxMetrics['eventProcessed']>[0]): void {
    this.inner.eventProcessed(event);
  }

  exposition(): ReturnType<InboxMetrics['exposition']> {
    return this.inner.exposition();
  }

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), STATS_FLUSH_MS).unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush();
  }

  /** Adds what was counted since the last flush; a failed flush keeps nothing (the counts are an overview, not a ledger). */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write().catch((error: unknown) => this.logger.warn({ err: error }, 'delivery stats not written')));
    return this.flushing;
  }

  private async write(): Promise<void> {
    await this.writeSample();
    const counts = [...this.counts.values()];
    const rejections = this.rejections;
    this.counts = new Map();
    this.rejections = [];
    if (counts.length === 0 && rejections.length === 0) return;
    const now = toDbTime(this.clock.now());
    await this.db.transaction().execute(async (tx) => {
      for (const entry of counts) {
        // Insert-or-ignore, then add: portable to every store, and concurrent processes both count.
        await tx
          .insertInto('delivery_stats')
          .orIgnore()
          .values({ minute: entry.minute, provider: entry.provider, result: entry.result, deliveries: 0, ack_ms_total: 0, ack_ms_max: 0 })
          .execute();
        await tx
          .updateTable('delivery_stats')
          .set((eb) => ({
            deliveries: eb('deliveries', '+', entry.deliveries),
            ack_ms_total: eb('ack_ms_total', '+', entry.ackMsTotal),
          }))
          .where('minute', '=', entry.minute)
          .where('provider', '=', entry.provider)
          .where('result', '=', entry.result)
          .execute();
        await tx
          .updateTable('delivery_stats')
          .set({ ack_ms_max: entry.ackMsMax })
          .where('minute', '=', entry.minute)
          .where('provider', '=', entry.provider)
          .where('result', '=', entry.result)
          .where('ack_ms_max', '<', entry.ackMsMax)
          .execute();
      }
      for (const rejection of rejections) {
        const slot = this.nextSlot;
        this.nextSlot = (this.nextSlot + 1) % REJECTION_RING_SLOTS;
        const row = {
          rejected_at: now,
          provider: rejection.provider,
          status_code: rejection.statusCode,
          reason: rejection.reason.slice(0, 500),
          remote_address: rejection.remoteAddress,
          body_bytes: rejection.bodyBytes,
        };
        await tx
          .insertInto('rejected_deliveries')
          .orIgnore()
          .values({ slot, ...row })
          .execute();
        await tx.updateTable('rejected_deliveries').set(row).where('slot', '=', slot).execute();
      }
    });
  }
}
