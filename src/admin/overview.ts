import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import { fromDbTime, toDbTime, type InboxDatabase, type OutboxStatus } from '../db/schema.js';
import type { InboxStore } from '../store/inbox-store.js';

export type OverviewPeriod = 'hour' | 'day';

const PERIODS: Record<OverviewPeriod, { spanMs: number; bucketMs: number }> = {
  hour: { spanMs: 3600_000, bucketMs: 60_000 },
  day: { spanMs: 24 * 3600_000, bucketMs: 15 * 60_000 },
};

export interface OverviewBucket {
  /** The bucket's start, ISO. */
  at: string;
  /** Deliveries answered in the bucket, by result (accepted, duplicate, invalid_signature, ...). */
  deliveries: Record<string, number>;
  /** Mean and worst acknowledgement time of the bucket's deliveries, in ms; null without deliveries. */
  ackMeanMs: number | null;
  ackMaxMs: number | null;
  /** The bucket's last sample of what needed attention; null where no process took one. */
  sample: { due: number; oldestPendingSeconds: number | null; failed: number; stuck: number; outboxFailed: number } | null;
}

export interface Overview {
  period: OverviewPeriod;
  bucketSeconds: number;
  buckets: OverviewBucket[];
  /** Now, over every process (read from the database). */
  backlogDue: number;
  oldestPendingAgeSeconds: number | null;
  failed: number;
  stuck: number;
  outbox: Record<OutboxStatus, number>;
  recentRejections: Array<{ at: string; provider: string; statusCode: number; reason: string; remoteAddress: string | null; bodyBytes: number | null }>;
}

/** The overview screen's figures, all read from the database, so every process's work adds up. */
export async function overview(
  db: Kysely<InboxDatabase>,
  store: InboxStore,
  outboxCounts: () => Promise<Record<OutboxStatus, number>>,
  clock: Clock,
  period: OverviewPeriod,
): Promise<Overview> {
  const { spanMs, bucketMs } = PERIODS[period];
  const now = clock.now();
  const start = Math.floor((now.getTime() - spanMs) / bucketMs + 1) * bucketMs;
  const since = toDbTime(new Date(start));
  const [rows, samples, stats, outbox, rejections] = await Promise.all([
    db.selectFrom('delivery_stats').selectAll().where('minute', '>=', since).execute(),
    db.selectFrom('pipeline_samples').selectAll().where('minute', '>=', since).orderBy('minute').execute(),
    store.pipelineStats(),
    outboxCounts(),
    recentRejections(db, 5),
  ]);
  const emptyBucket = (index: number): OverviewBucket & { total: number; ackMs: number; ackMaxMs: number } => ({
    at: new Date(start + index * bucketMs).toISOString(),
    deliveries: {},
    ackMeanMs: null,
    sample: null,
    total: 0,
    ackMs: 0,
    ackMaxMs: 0,
  });
  const buckets = Array.from({ length: spanMs / bucketMs }, (_, index) => emptyBucket(index));
  for (const row of rows) {
    const bucket = buckets[Math.floor((fromDbTime(row.minute).getTime() - start) / bucketMs)];
    if (!bucket) continue;
    const deliveries = Number(row.deliveries);
    bucket.deliveries[row.result] = (bucket.deliveries[row.result] ?? 0) + deliveries;
    bucket.total += deliveries;
    bucket.ackMs += Number(row.ack_ms_total);
    bucket.ackMaxMs = Math.max(bucket.ackMaxMs, Number(row.ack_ms_max));
  }
  for (const row of samples) {
    const bucket = buckets[Math.floor((fromDbTime(row.minute).getTime() - start) / bucketMs)];
    if (!bucket) continue;
    // In minute order: the bucket keeps its latest sample.
    bucket.sample = {
      due: Number(row.due),
      oldestPendingSeconds: row.oldest_pending_seconds === null ? null : Number(row.oldest_pending_seconds),
      failed: Number(row.failed),
      stuck: Number(row.stuck),
      outboxFailed: Number(row.outbox_failed),
    };
  }
  return {
    period,
    bucketSeconds: bucketMs / 1000,
    buckets: buckets.map(({ at, deliveries, sample, total, ackMs, ackMaxMs }) => ({
      at,
      deliveries,
      ackMeanMs: total > 0 ? Math.round(ackMs / total) : null,
      ackMaxMs: total > 0 ? ackMaxMs : null,
      sample,
    })),
    backlogDue: stats.due,
    oldestPendingAgeSeconds: stats.oldestPendingAt ? Math.max(0, Math.round((now.getTime() - stats.oldestPendingAt.getTime()) / 1000)) : null,
    failed: stats.failed,
    stuck: stats.stuck,
    outbox,
    recentRejections: rejections,
  };
}

/** The newest refused deliveries, newest first (the ring keeps the last REJECTION_RING_SLOTS). */
export async function recentRejections(db: Kysely<InboxDatabase>, limit: number): Promise<Overview['recentRejections']> {
  const rows = await db.selectFrom('rejected_deliveries').selectAll().orderBy('rejected_at', 'desc').orderBy('id', 'desc').limit(limit).execute();
  return rows.map((r) => ({
    at: fromDbTime(r.rejected_at).toISOString(),
    provider: r.provider,
    statusCode: r.status_code,
    reason: r.reason,
    remoteAddress: r.remote_address,
    bodyBytes: r.body_bytes === null ? null : Number(r.body_bytes),
  }));
}
