import { OperationError } from '../errors.js';
import type { ArchiveStorage } from './storage.js';

export const MANIFEST_FILE = 'manifest.json';
const FORMAT = 'webhook-inbox-archive/1';

/**
 * One archive file: the events of one day (at most a bounded number per file). `written` means the
 * file is complete and checksummed but its rows may still be in the database; `complete` means every
 * row the file holds was verified against it and deleted (or kept because it changed meanwhile).
 */
export interface ArchivePart {
  file: string;
  day: string;
  events: number;
  bytes: number;
  sha256: string;
  firstId: number;
  lastId: number;
  writtenAt: string;
  state: 'written' | 'complete';
  /** The key that sealed the file (ARCHIVE_ENCRYPTION_KEY's id); absent: written unencrypted. */
  keyId?: string;
  /** Rows left in the database because they changed after the file was written (e.g. replayed). */
  kept?: number;
  completedAt?: string;
}

export interface Manifest {
  format: typeof FORMAT;
  parts: ArchivePart[];
}

export async function loadManifest(storage: ArchiveStorage, options: { create: boolean }): Promise<Manifest> {
  const bytes = await storage.read(MANIFEST_FILE);
  if (bytes === null) {
    if (options.create) return { format: FORMAT, parts: [] };
    throw new OperationError(`${storage.location} is not an archive: it has no ${MANIFEST_FILE}`, 'not_an_archive');
  }
  let manifest: Manifest | null = null;
  try {
    manifest = JSON.parse(bytes.toString('utf8')) as Manifest;
  } catch {
    // Named below like any other manifest that is not ours.
  }
  if (manifest?.format !== FORMAT || !Array.isArray(manifest.parts)) {
    throw new OperationError(`the ${MANIFEST_FILE} of ${storage.location} is not a ${FORMAT} manifest`, 'not_an_archive');
  }
  return manifest;
}

export async function saveManifest(storage: ArchiveStorage, manifest: Manifest): Promise<void> {
  await storage.write(MANIFEST_FILE, Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`, 'utf8'));
}
