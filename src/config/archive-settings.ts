import { parseArchiveKeys } from './archive-keys.js';
import { parseArchiveLocation } from './archive-location.js';
import { readArchiveS3 } from './archive-s3.js';
import type { EnvReader } from './environment.js';
import type { ArchiveKey, OperationsSettings } from './settings.js';

/** Where archives go, when the service archives, how old an event must be, the object store's settings, and the keys that seal the files. */
export function readArchiveSettings(read: EnvReader): OperationsSettings['archive'] {
  const cron = read.cron('ARCHIVE_CRON', null);
  const to = readArchiveTo(read);
  if (cron && !to) read.problem('ARCHIVE_TO (or ARCHIVE_DIR) must be set when ARCHIVE_CRON is set (where the archive files go)');
  return { cron, to, olderThanMs: read.duration('ARCHIVE_OLDER_THAN', '90d'), s3: readArchiveS3(read), keys: readArchiveKeys(read) };
}

/** ARCHIVE_TO, or ARCHIVE_DIR (its first name, still read): both set, they must agree. */
function readArchiveTo(read: EnvReader): string | null {
  const to = read.string('ARCHIVE_TO', '') || null;
  const dir = read.string('ARCHIVE_DIR', '') || null;
  if (to && dir && to !== dir) read.problem(`ARCHIVE_TO and ARCHIVE_DIR name different archives ("${to}", "${dir}"): set one`);
  const location = to ?? dir;
  if (location === null) return null;
  try {
    parseArchiveLocation(location);
  } catch (error) {
    read.problem(`${to ? 'ARCHIVE_TO' : 'ARCHIVE_DIR'} ${(error as Error).message}`);
  }
  return location;
}

/** ARCHIVE_ENCRYPTION_KEY's keys, the first encrypting; empty when unset (archives are written unencrypted). */
function readArchiveKeys(read: EnvReader): ArchiveKey[] {
  const text = read.string('ARCHIVE_ENCRYPTION_KEY', '', 'secret');
  if (text === '') return [];
  try {
    return parseArchiveKeys(text);
  } catch (error) {
    read.problem(`ARCHIVE_ENCRYPTION_KEY ${(error as Error).message}`);
    return [];
  }
}
