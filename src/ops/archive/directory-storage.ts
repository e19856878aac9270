import { mkdir, open, readFile, rename, unlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { lockArchiveDir } from './lock.js';
import type { ArchiveStorage } from './storage.js';

/** An archive in a local directory (made when first written). */
export class DirectoryStorage implements ArchiveStorage {
  constructor(readonly location: string) {}

  async read(name: string): Promise<Buffer | null> {
    try {
      return await readFile(join(this.location, name));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw error;
    }
  }

  async write(name: string, data: Buffer): Promise<void> {
    await mkdir(this.location, { recursive: true });
    await writeFileDurably(join(this.location, name), data);
  }

  async remove(name: string): Promise<void> {
    await unlink(join(this.location, name)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error;
    });
  }

  async lock(): Promise<() => Promise<void>> {
    await mkdir(this.location, { recursive: true });
    return lockArchiveDir(this.location);
  }
}

/** Writes to a temporary name, syncs, renames, and syncs the directory: the file is whole or absent. */
async function writeFileDurably(path: string, data: Buffer): Promise<void> {
  const temporary = `${path}.partial`;
  const file = await open(temporary, 'w');
  try {
    await file.writeFile(data);
    await file.sync();
  } finally {
    await file.close();
  }
  await rename(temporary, path);
  const directory = await open(dirname(path), 'r');
  try {
    await directory.sync();
  } finally {
    await directory.close();
  }
}
