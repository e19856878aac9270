import { createHash } from 'node:crypto';
import type { Kysely } from 'kysely';
import type { Clock } from '../../clock.js';
import { ownerGoneFromThisHost, processOwner } from '../../db/lease.js';
import { OperationLock } from '../../db/operation-lock.js';
import type { InboxDatabase } from '../../db/schema.js';
import { MAX_KEY_LENGTH } from '../../model/delivery.js';
import { OperationError } from '../errors.js';
import type { ArchiveStorage } from './storage.js';

/** How long a run's lock outlives its last renewal: a run that died frees its archive after this. */
const LOCK_TTL_MS = 2 * 60_000;

export interface ArchiveRunLock {
  /** Fails when the lock was lost (a renewal came too late and another run may have taken it): nothing more may be written or deleted. */
  confirm(): Promise<void>;
  release(): Promise<void>;
}

/**
 * One archive run per archive location at a time, across every process and host that share the
 * database: a row of operation_locks named `archive:<location>`, then the storage's own lock, which
 * also checks that the archive can be written before any event is read.
 *
 * Why the database and not the object store: a lock object put with If-None-Match would need a
 * store that honours conditional writes, and not every S3-compatible one does (s3rver, which the
 * tests run, ignores it), so it would exclude nothing there. The database lock works the same on
 * SQLite, MySQL and PostgreSQL, whatever the archive's kind. Two installations with databases of
 * their own must not share one prefix (a directory still has its lock file for that case).
 */
export async function lockArchiveRun(db: Kysely<InboxDatabase>, clock: Clock, storage: ArchiveStorage): Promise<ArchiveRunLock> {
  const lock = new OperationLock({ db, clock, name: lockName(storage.location), owner: processOwner(), ttlMs: LOCK_TTL_MS });
  let holder = await lock.take();
  // A run killed on this host leaves its row until it expires; its pid says it is gone, as for a lock file.
  if (holder && ownerGoneFromThisHost(holder.owner)) holder = await lock.takeFrom(holder.owner);
  if (holder) {
    throw new OperationError(`another archive run (${holder.owner}, its lock held until ${holder.expiresAt} UTC) is using ${storage.location}`, 'archive_locked');
  }
  let unlockStorage: () => Promise<void>;
  try {
    unlockStorage = await storage.lock();
  } catch (error) {
    await lock.release();
    throw error;
  }
  return {
    async confirm() {
      if (!(await lock.renew())) throw new OperationError(`the archive run lost its lock on ${storage.location}; stopped before writing or deleting more`, 'archive_locked');
    },
    async release() {
      try {
        await unlockStorage();
      } finally {
        await lock.release();
      }
    },
  };
}

/** `archive:<location>`; a location too long for the lock's name column is named by its SHA-256. */
function lockName(location: string): string {
  const name = `archive:${location}`;
  return name.length <= MAX_KEY_LENGTH ? name : `archive:sha256:${createHash('sha256').update(location).digest('hex')}`;
}
