import type { Kysely, Selectable } from 'kysely';
import type { Clock } from '../clock.js';
import { toDbTime, type AdminActionsTable, type InboxDatabase } from '../db/schema.js';
import type { Actor } from './access.js';
import { isoTime } from './event-list.js';

/** One audit row as shown: its time in ISO 8601. */
export type AdminAction = Omit<Selectable<AdminActionsTable>, 'id'>;

/** One change as the audit log records it, beside who made it. */
export interface AuditEntry {
  /** What was done: `replay`, `outbox_retry`, `bulk_replay_started`, ... */
  action: string;
  /** What it was done to: `event 12`, `outbox 3`, `bulk <id>`. */
  target: string;
  /** Why, in the operator's words; null where the action asks for none. */
  reason: string | null;
  /** What came of it, in words; null when nothing is to be said. */
  result: string | null;
}

/** Every change made through /admin, with who (token name or proxy user), their role, and why. */
export class AuditLog {
  constructor(
    private readonly db: Kysely<InboxDatabase>,
    private readonly clock: Clock,
  ) {}

  async record(actor: Actor, { action, target, reason, result }: AuditEntry): Promise<void> {
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
