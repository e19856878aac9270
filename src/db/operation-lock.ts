import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import { toDbTime, type DbTime, type InboxDatabase } from './schema.js';

export interface OperationLockHolder {
  owner: string;
  expiresAt: DbTime;
}

export interface OperationLockOptions {
  db: Kysely<InboxDatabase>;
  clock: Clock;
  /** The operation locked: its row in operation_locks. */
  name: string;
  /** This process, as the row shows who holds the lock. */
  owner: string;
  /** How long the lock outlives its holder's last renewal. */
  ttlMs: number;
}

/**
 * A lock of one named operation across processes, a row of `operation_locks`: held by its owner until
 * it expires, renewed while the operation runs, so a holder that died frees it by itself. Taken with
 * statements every store runs alike: a conditional update of an expired (or own) row, else an insert,
 * which the unique name lets only one process win; then a read says who holds it.
 */
export class OperationLock {
  private renewal: NodeJS.Timeout | undefined;
  readonly name: string;
  readonly owner: string;
  private readonly db: Kysely<InboxDatabase>;
  private readonly clock: Clock;
  private readonly ttlMs: number;

  constructor(options: OperationLockOptions) {
    ({ db: this.db, clock: this.clock, name: this.name, owner: this.owner, ttlMs: this.ttlMs } = options);
  }

  /** Null when taken (and renewed from now on until release), else who holds it. */
  async take(): Promise<OperationLockHolder | null> {
    const now = this.clock.now();
    const expiresAt = toDbTime(new Date(now.getTime() + this.ttlMs));
    const updated = await this.db
      .updateTable('operation_locks')
      .set({ owner: this.owner, expires_at: expiresAt })
      .where('name', '=', this.name)
      .where((eb) => eb.or([eb('expires_at', '<', toDbTime(now)), eb('owner', '=', this.owner)]))
      .executeTakeFirst();
    if (Number(updated.numUpdatedRows) === 0) {
      // The row is missing (first use) or held: the insert fails on the unique name when it exists.
      await this.db
        .insertInto('operation_locks')
        .values({ name: this.name, owner: this.owner, expires_at: expiresAt })
        .execute()
        .catch(() => undefined);
    }
    const holder = await this.holder();
    if (holder?.owner !== this.owner) return holder ?? { owner: '(unknown)', expiresAt: '' };
    this.renewal = setInterval(() => void this.renew(), Math.max(10, Math.floor(this.ttlMs / 3)));
    this.renewal.unref();
    return null;
  }

  async holder(): Promise<OperationLockHolder | null> {
    const row = await this.db.selectFrom('operation_locks').select(['owner', 'expires_at']).where('name', '=', this.name).executeTakeFirst();
    return row ? { owner: row.owner, expiresAt: row.expires_at } : null;
  }

  /** Whether the lock is still this owner's (it is lost if a renewal came too late). */
  async renew(): Promise<boolean> {
    const updated = await this.db
      .updateTable('operation_locks')
      .set({ expires_at: toDbTime(new Date(this.clock.now().getTime() + this.ttlMs)) })
      .where('name', '=', this.name)
      .where('owner', '=', this.owner)
      .executeTakeFirst()
      .catch(() => null);
    return updated !== null && Number(updated.numUpdatedRows) === 1;
  }

  /** Frees the lock from `owner`, who is known to be gone (a process that died on this host); nothing if someone else holds it by now. */
  async takeFrom(owner: string): Promise<OperationLockHolder | null> {
    await this.db.deleteFrom('operation_locks').where('name', '=', this.name).where('owner', '=', owner).execute();
    return this.take();
  }

  async release(): Promise<void> {
    clearInterval(this.renewal);
    await this.db.deleteFrom('operation_locks').where('name', '=', this.name).where('owner', '=', this.owner).execute();
  }
}
