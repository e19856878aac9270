import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { toDbTime, type DbTime, type InboxDatabase } from '../db/schema.js';
import { isProviderName } from '../model/delivery.js';
import type { AdminSignInRefusal, AdminSignInVia, DeliveryResult, InboxMetrics } from './metrics.js';

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

/** The start of the minute `date` is in, as stored: 'YYYY-MM-DD HH:MM:00.000'. */
export function minuteOf(date: Date): DbTime {
  return toDbTime(new Date(date.getTime() - (date.getTime() % 60_000)));
}

/** Deletes the per-minute counts and samples from before `before`: the statistics' retention. */
export async function deleteStatisticsBefore(db: Kysely<InboxDatabase>, before: Date): Promise<void> {
  const minute = minuteOf(before);
  await db.deleteFrom('delivery_stats').where('minute', '<', minute).execute();
  await db.deleteFrom('pipeline_samples').where('minute', '<', minute).execute();
}

/**
 * Counts deliveries per minute, provider and result in memory, beside the metrics it wraps, and adds
 * them to `delivery_stats` every few seconds, so the admin overview and the provider alert rules see
 * every process. The answer path only touches a map; rejections go to a fixed ring of rows, so a
 * forged flood cannot grow a table. A provider name from the URL that is not one of ours is counted
 * as `unknown`: a path an attacker tries must not add rows.
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
    this.add({
      minute: minuteOf(this.clock.now()),
      provider: isProviderName(provider) ? provider : 'unknown',
      result,
      deliveries: 1,
      ackMsTotal: Math.round(seconds * 1000),
      ackMsMax: Math.round(seconds * 1000),
    });
  }

  private add(counts: MinuteCounts): void {
    const key = `${counts.minute}|${counts.provider}|${counts.result}`;
    const entry = this.counts.get(key);
    if (!entry) this.counts.set(key, { ...counts });
    else {
      entry.deliveries += counts.deliveries;
      entry.ackMsTotal += counts.ackMsTotal;
      entry.ackMsMax = Math.max(entry.ackMsMax, counts.ackMsMax);
    }
  }

  rejected(rejection: Rejection): void {
    if (this.rejections.length < REJECTIONS_PER_FLUSH) this.rejections.push({ ...rejection, provider: isProviderName(rejection.provider) ? rejection.provider : 'unknown' });
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

  workersYielded(seconds: number): void {
    this.inner.workersYielded?.(seconds);
  }

  adminSignInRefused(via: AdminSignInVia, reason: AdminSignInRefusal): void {
    this.inner.adminSignInRefused?.(via, reason);
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

  /**
   * Adds what was counted since the last flush. A failed flush keeps the counts for the next one (the
   * alert rules read them: a database outage must not hide the 503s it caused); rejections are
   * examples only, and go.
   */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(async () => {
      await this.writeSample().catch((error: unknown) => this.logger.warn({ err: error }, 'pipeline sample not written'));
      const counts = [...this.counts.values()];
      const rejections = this.rejections;
      this.counts = new Map();
      this.rejections = [];
      if (counts.length === 0 && rejections.length === 0) return;
      try {
        await this.write(counts, rejections);
      } catch (error) {
        for (const entry of counts) this.add(entry);
        this.logger.warn({ err: error }, 'delivery counts not written; kept for the next flush');
      }
    });
    return this.flushing;
  }

  private async write(counts: MinuteCounts[], rejections: Rejection[]): Promise<void> {
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
