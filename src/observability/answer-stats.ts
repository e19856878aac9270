import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { Clock } from '../clock.js';
import { toDbTime, type InboxDatabase, type ProviderAnswer } from '../db/schema.js';
import type { DeliveryResult } from './metrics.js';

/** How often a process adds its counts to the database: a few statements per interval, whatever the traffic. */
const FLUSH_INTERVAL_MS = 5000;

/** The class of answer a delivery result is, as the alert rules read them. */
export function answerClass(result: DeliveryResult): ProviderAnswer {
  switch (result) {
    case 'accepted':
    case 'duplicate':
      return '2xx';
    case 'invalid_signature':
      return 'signature';
    case 'bad_request':
      return '4xx';
    default:
      return '5xx';
  }
}

/** 'YYYY-MM-DD HH:MM:00.000' */
export function minuteOf(date: Date): string {
  return `${toDbTime(date).slice(0, 16)}:00.000`;
}

/**
 * How each provider was answered, per minute, in `provider_answer_stats`: counted in memory on the
 * delivery path (no I/O there) and added to the shared rows every few seconds, so the counts of every
 * process add up and the alert rules see the installation, not one process.
 */
export class ProviderAnswerStats {
  private pending = new Map<string, { provider: string; minute: string; answer: ProviderAnswer; count: number }>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Kysely<InboxDatabase>,
    private readonly clock: Clock,
    private readonly logger: Logger,
  ) {}

  add(provider: string, result: DeliveryResult): void {
    const minute = minuteOf(this.clock.now());
    const answer = answerClass(result);
    const key = `${provider}\u0000${minute}\u0000${answer}`;
    const entry = this.pending.get(key);
    if (entry) entry.count++;
    else this.pending.set(key, { provider, minute, answer, count: 1 });
    this.timer ??= setTimeout(() => void this.flush(), FLUSH_INTERVAL_MS).unref();
  }

  /** Adds the counts gathered so far; a failure keeps them for the next flush. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  private async write(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const entries = [...this.pending.values()];
    this.pending = new Map();
    for (const [i, entry] of entries.entries()) {
      try {
        await this.addCount(entry);
      } catch (error) {
        this.logger.warn({ err: error }, 'provider answer counts not written; kept for the next flush');
        for (const kept of entries.slice(i)) {
          const key = `${kept.provider}\u0000${kept.minute}\u0000${kept.answer}`;
          const later = this.pending.get(key);
          this.pending.set(key, { ...kept, count: kept.count + (later?.count ?? 0) });
        }
        this.timer ??= setTimeout(() => void this.flush(), FLUSH_INTERVAL_MS).unref();
        return;
      }
    }
  }

  /** An update of the minute's row, else its insert; an insert another process won is an update again. */
  private async addCount(entry: { provider: string; minute: string; answer: ProviderAnswer; count: number }): Promise<void> {
    const update = () =>
      this.db
        .updateTable('provider_answer_stats')
        .set((eb) => ({ count: eb('count', '+', entry.count) }))
        .where('provider', '=', entry.provider)
        .where('minute', '=', entry.minute)
        .where('answer', '=', entry.answer)
        .executeTakeFirst();
    if (Number((await update()).numUpdatedRows) > 0) return;
    try {
      await this.db.insertInto('provider_answer_stats').values(entry).execute();
    } catch (error) {
      if (Number((await update()).numUpdatedRows) === 0) throw error;
    }
  }
}
