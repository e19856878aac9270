import { createHash, randomBytes } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import { fromDbTime, toDbTime, type InboxDatabase } from '../db/schema.js';

/** last_seen_at moves forward at most this often, so a page's every request is not a write. */
const LAST_SEEN_EVERY_MS = 60_000;

const hashOf = (id: string) => createHash('sha256').update(id).digest('hex');

/**
 * Dashboard sessions, one row each in admin_sessions, so every process knows the same ones: signing
 * out deletes the row, and the cookie is refused by every process at once. The cookie carries a
 * random id; the row holds its hash only, so reading the table gives no one a session.
 */
export class AdminSessions {
  constructor(
    private readonly db: Kysely<InboxDatabase>,
    private readonly clock: Clock,
    private readonly ttlMs: number,
  ) {}

  /** A new session for the ADMIN_TOKENS entry named `actor`: the id its cookie carries. */
  async start(actor: string): Promise<string> {
    const id = randomBytes(32).toString('base64url');
    const now = this.clock.now();
    await this.db
      .insertInto('admin_sessions')
      .values({ session_hash: hashOf(id), actor, created_at: toDbTime(now), expires_at: toDbTime(new Date(now.getTime() + this.ttlMs)), last_seen_at: toDbTime(now) })
      .execute();
    return id;
  }

  /** The name a live session signed in as; null once it was signed out or expired. */
  async actorOf(id: string): Promise<string | null> {
    const now = this.clock.now();
    const hash = hashOf(id);
    const row = await this.db
      .selectFrom('admin_sessions')
      .select(['actor', 'last_seen_at'])
      .where('session_hash', '=', hash)
      .where('expires_at', '>', toDbTime(now))
      .executeTakeFirst();
    if (!row) return null;
    if (now.getTime() - fromDbTime(row.last_seen_at).getTime() >= LAST_SEEN_EVERY_MS) {
      await this.db
        .updateTable('admin_sessions')
        .set({ last_seen_at: toDbTime(now) })
        .where('session_hash', '=', hash)
        .execute();
    }
    return row.actor;
  }

  /** Sign-out: the session is gone for every process. */
  async end(id: string): Promise<void> {
    await this.db.deleteFrom('admin_sessions').where('session_hash', '=', hashOf(id)).execute();
  }

  /** Deletes the sessions that have expired (refused already; this keeps the table small). */
  async deleteExpired(): Promise<void> {
    await this.db.deleteFrom('admin_sessions').where('expires_at', '<=', toDbTime(this.clock.now())).execute();
  }
}
