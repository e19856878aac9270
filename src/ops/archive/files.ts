import { createHash } from 'node:crypto';
import { open, readFile, rename } from 'node:fs/promises';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { gunzip, gzip } from 'node:zlib';
import type { EventRow } from '../../db/event-rows.js';

export const gzipAsync = promisify(gzip);
export const gunzipAsync = promisify(gunzip);

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

/** Writes to a temporary name, syncs, renames, and syncs the directory: the file is whole or absent. */
export async function writeFileDurably(path: string, data: Buffer | string): Promise<void> {
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

/** Reads an archive file, checks it against its recorded checksum, and returns its lines. */
export async function readArchiveLines(path: string, expectedSha256: string): Promise<string[]> {
  const compressed = await readFile(path);
  const actual = sha256Hex(compressed);
  if (actual !== expectedSha256) throw new Error(`${path} does not match its manifest checksum (sha256 ${actual}, expected ${expectedSha256})`);
  const text = (await gunzipAsync(compressed)).toString('utf8');
  return text === '' ? [] : text.replace(/\n$/, '').split('\n');
}
