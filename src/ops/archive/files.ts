import { createHash } from 'node:crypto';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { EventRow } from '../../db/event-rows.js';
import { OperationError } from '../errors.js';
import type { ArchivePart } from './manifest.js';
import type { ArchiveKeyring } from './encryption.js';
import type { ArchiveStorage } from './storage.js';

const gzipAsync = promisify(gzip);
const gunzipAsync = promisify(gunzip);

/**
 * One archived event per line. Every column that matters after processing, in a fixed order, so the
 * line written for a row and the line made again from the same row compare equal as text. The
 * payload stays the exact stored text (a JSON string inside the line).
 */
export function archiveLine(row: EventRow): string {
  return JSON.stringify({
    id: Number(row.id),
    provider: row.provider,
    event_id: row.event_id,
    event_type: row.event_type,
    status: row.status,
    attempts: row.attempts,
    outcome: row.outcome,
    outcome_detail: row.outcome_detail,
    last_error: row.last_error,
    created_at: row.created_at,
    processed_at: row.processed_at,
    headers: row.headers,
    payload: row.payload,
  });
}

/** An archive line read back; files written before migration 0032 have no `outcome_detail`. */
export type ArchivedEvent = Pick<
  EventRow,
  'provider' | 'event_id' | 'event_type' | 'status' | 'attempts' | 'outcome' | 'last_error' | 'created_at' | 'processed_at' | 'headers' | 'payload'
> &
  Partial<Pick<EventRow, 'outcome_detail'>> & { id: number };

export function sha256Hex(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

/** An archive as the archiver, search, restore and rekey use it: where its files are, and the keys that seal and open them. */
export interface Archive {
  storage: ArchiveStorage;
  keyring: ArchiveKeyring;
}

/** Writes `lines` as the file `name`: gzip, then sealed when a key is configured. Returns what the manifest records of it. */
export async function writeArchiveFile(archive: Archive, name: string, lines: string[]): Promise<Pick<ArchivePart, 'bytes' | 'sha256' | 'keyId'>> {
  const stored = archive.keyring.seal(name, await gzipAsync(Buffer.from(lines.map((line) => `${line}\n`).join(''), 'utf8')));
  await archive.storage.write(name, stored);
  return { bytes: stored.length, sha256: sha256Hex(stored), keyId: archive.keyring.sealingKeyId ?? undefined };
}

/** Reads an archive file, checks it against its manifest entry's checksum, opens it, and returns its lines. */
export async function readArchiveLines({ storage, keyring }: Archive, part: Pick<ArchivePart, 'file' | 'sha256'>): Promise<string[]> {
  const stored = await storage.read(part.file);
  if (stored === null) throw new OperationError(`${part.file} is in the manifest of ${storage.location} but missing there`, 'archive_damaged');
  const actual = sha256Hex(stored);
  if (actual !== part.sha256)
    throw new OperationError(`${part.file} in ${storage.location} does not match its manifest checksum (sha256 ${actual}, expected ${part.sha256})`, 'archive_damaged');
  const text = (await gunzipAsync(keyring.open(part.file, stored, storage.location))).toString('utf8');
  return text === '' ? [] : text.replace(/\n$/, '').split('\n');
}
