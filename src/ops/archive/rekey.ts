import type { Inbox } from '../../inbox.js';
import { OperationError } from '../errors.js';
import { readArchiveLines, writeArchiveFile, type Archive } from './files.js';
import { loadManifest, saveManifest } from './manifest.js';
import { lockArchiveRun } from './run-lock.js';

export interface RekeyReport {
  location: string;
  /** The key every file is sealed with now. */
  keyId: string;
  /** Files sealed again under it: their former name and key (null: unencrypted), and their name now. */
  rekeyed: Array<{ from: string; previousKeyId: string | null; to: string; events: number }>;
  /** Files that were already under it. */
  current: number;
}

/**
 * Seals every file of the archive under the first key of ARCHIVE_ENCRYPTION_KEY, after a rotation or
 * to encrypt an archive written without a key. Each file is read back whole and checked (checksum,
 * authentication) under its old key, written under a new name with the new key, read back again,
 * recorded in the manifest, and only then is the old file deleted: a run stopped at any point leaves
 * every event readable through the manifest, and running it again finishes the rest.
 */
export async function rekeyArchive(inbox: Pick<Inbox, 'database' | 'clock'>, archive: Archive, onProgress?: (done: number, total: number) => void): Promise<RekeyReport> {
  const keyId = archive.keyring.sealingKeyId;
  if (keyId === null) throw new OperationError('rekey seals the archive under the first key of ARCHIVE_ENCRYPTION_KEY, which is not set', 'bad_argument');
  const { storage } = archive;
  // The archive's run lock: no archive run writes or settles a file while it is sealed again.
  const lock = await lockArchiveRun(inbox.database, inbox.clock, storage);
  try {
    const manifest = await loadManifest(storage, { create: false });
    const report: RekeyReport = { location: storage.location, keyId, rekeyed: [], current: 0 };
    for (const [index, part] of manifest.parts.entries()) {
      if (part.keyId === keyId) {
        report.current++;
      } else {
        await lock.confirm();
        const lines = await readArchiveLines(archive, part);
        const name = `${baseName(part.file)}.${keyId}.jsonl.gz`;
        const written = await writeArchiveFile(archive, name, lines);
        const check = await readArchiveLines(archive, { file: name, sha256: written.sha256 });
        if (check.length !== lines.length || check.some((line, i) => line !== lines[i])) {
          throw new OperationError(`${name} in ${storage.location} did not read back as written; ${part.file} is kept`, 'archive_damaged');
        }
        const previous = { file: part.file, keyId: part.keyId ?? null };
        Object.assign(part, { file: name, ...written });
        await saveManifest(storage, manifest);
        await storage.remove(previous.file);
        report.rekeyed.push({ from: previous.file, previousKeyId: previous.keyId, to: name, events: lines.length });
      }
      onProgress?.(index + 1, manifest.parts.length);
    }
    return report;
  } finally {
    await lock.release();
  }
}

/** `2024-05-01.0001` of `2024-05-01.0001.jsonl.gz` or `2024-05-01.0001.k1.jsonl.gz`: the day and the file's place in it. */
function baseName(file: string): string {
  const base = /^(\d{4}-\d{2}-\d{2}\.\d{4})\./.exec(file)?.[1];
  if (base === undefined) throw new OperationError(`${file} is not named as this archive names its files (DAY.NNNN...)`, 'archive_damaged');
  return base;
}
