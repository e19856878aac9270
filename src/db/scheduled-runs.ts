import type { Kysely } from 'kysely';
import { toDbTime, type InboxDatabase } from './schema.js';

/**
 * Whether this process runs a scheduled job's tick. Every serve process schedules the same jobs; the
 * one that moves the job's `last_tick` forward to this tick runs it and the others skip it, so an
 * alert is posted once per tick however many processes there are. The tick is the time the schedule
 * named (not when a process woke up), so every process asks about the same one. Same statements on
 * every store: a conditional update, else, for a job's first tick ever, an insert that the unique job
 * name lets only one process make.
 */
export async function claimScheduledTick(db: Kysely<InboxDatabase>, job: string, tick: Date, owner: string): Promise<boolean> {
  const at = toDbTime(tick);
  const moved = await db.updateTable('scheduled_runs').set({ last_tick: at, owner }).where('job', '=', job).where('last_tick', '<', at).executeTakeFirst();
  if (Number(moved.numUpdatedRows) > 0) return true;
  const inserted = await db.insertInto('scheduled_runs').orIgnore().values({ job, last_tick: at, owner }).executeTakeFirst();
  return Number(inserted.numInsertedOrUpdatedRows ?? 0) > 0;
}
