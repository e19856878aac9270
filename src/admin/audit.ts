import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import { toDbTime, type AdminActionsTable, type InboxDatabase } from '../db/schema.js';
import type { Actor } from './access.js';
import { isoTime } from './event-list.js';

/** One audit row as shown: its time in ISO 8601. */
export type AdminAction = Omit<Selectable<AdminActionsTable>, 'id'>;

/** Every change made through /admin, with who (token name or proxy user), their role, and why. */
export class AuditLog {
  constructor(
    private readonly db: Kysely<InboxDatabase>,
    private readonly clock: Clock,
  ) {}

  async record(actor: Actor, action: string, target: string, reason: string | null, result: string | null): Promise<void> {
    await this.db
      .insertInto('admin_actions')
      .values({ actor: actor.name, role: actor.role, action, target, reason, result, at: toDbTime(this.clock.now()) })
      .execute();
  }

  /** Newest first; `target` narrows to one thing (e.g. "event 12"). */
  async recent(limit: number, target?: string): Promise<AdminAction[]> {
    let query = this.db.selectFrom('admin_actions').selectAll().orderBy('id', 'desc').limit(limit);
    if (target) query = query.where('target', '=', target);
    const rows = await query.execute();
    return rows.map(({ id: _id, ...row }) => ({ ...row, at: isoTime(row.at) }));
  }
}
