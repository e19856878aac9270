import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { OperationError } from '../errors.js';
import { writeFileDurably } from './files.js';

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
  /** Rows left in the database because they changed after the file was written (e.g. replayed). */
  kept?: number;
  completedAt?: string;
}

export interface Manifest {
  format: typeof FORMAT;
  parts: ArchivePart[];
}

export async function loadManifest(dir: string, options: { create: boolean }): Promise<Manifest> {
  let text: string;
  try {
    text = await readFile(join(dir, MANIFEST_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    if (options.create) return { format: FORMAT, parts: [] };
    throw new OperationError(`${dir} is not an archive: it has no ${MANIFEST_FILE}`, 'not_an_archive');
  }
  const manifest = JSON.parse(text) as Manifest;
  if (manifest.format !== FORMAT || !Array.isArray(manifest.parts)) {
    throw new OperationError(`${join(dir, MANIFEST_FILE)} is not a ${FORMAT} manifest`, 'not_an_archive');
  }
  return manifest;
}

export async function saveManifest(dir: string, manifest: Manifest): Promise<void> {
  await writeFileDurably(join(dir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
}
