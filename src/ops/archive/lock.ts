import { link, readFile, unlink, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { processRunning } from '../../db/lease.js';
import { OperationError } from '../errors.js';

const LOCK_FILE = '.archive.lock';

interface LockOwner {
  pid: number;
  host: string;
  startedAt: string;
}

/**
 * One archive run per directory at a time. A lock left by a run that was killed on this host is taken
 * over (its pid is gone); a lock held from another host must be removed by hand.
 */
export async function lockArchiveDir(dir: string): Promise<() => Promise<void>> {
  const path = join(dir, LOCK_FILE);
  const owner: LockOwner = { pid: process.pid, host: hostname(), startedAt: new Date().toISOString() };
  // Written aside and hard-linked into place: the lock appears atomically, with its owner inside.
  const candidate = `${path}.${process.pid}`;
  await writeFile(candidate, JSON.stringify(owner));
  try {
    return await acquire(dir, path, candidate, owner);
  } finally {
    await unlink(candidate);
  }
}

async function acquire(dir: string, path: string, candidate: string, owner: LockOwner): Promise<() => Promise<void>> {
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      await link(candidate, path);
      return () => unlink(path);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = await readHolder(path);
      if (holder && (holder.host !== owner.host || processRunning(holder.pid))) {
        throw new OperationError(
          `another archive run (pid ${holder.pid} on ${holder.host}, since ${holder.startedAt}) is using ${dir}; if it is gone, remove ${path}`,
          'archive_locked',
        );
      }
      await unlink(path).catch(() => undefined);
    }
  }
  throw new OperationError(`could not lock ${dir} (${path} keeps reappearing)`, 'archive_locked');
}

async function readHolder(path: string): Promise<LockOwner | null> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as LockOwner;
  } catch {
    return null;
  }
}
