import { parseArchiveLocation } from '../../config/archive-location.js';
import type { OperationsSettings } from '../../config/settings.js';
import { OperationError } from '../errors.js';
import { DirectoryStorage } from './directory-storage.js';
import { ArchiveKeyring } from './encryption.js';
import type { Archive } from './files.js';
import { S3Storage } from './s3-storage.js';
import type { ArchiveStorage } from './storage.js';

/**
 * The storage `target` names (see parseArchiveLocation), reached with the archive settings (an
 * object store's region, endpoint, storage class); a location it refuses is a bad argument naming it.
 */
export function openArchiveStorage(target: string, settings: Pick<OperationsSettings['archive'], 's3'>): ArchiveStorage {
  let location;
  try {
    location = parseArchiveLocation(target);
  } catch (error) {
    throw new OperationError(`archive location ${(error as Error).message}`, 'bad_argument');
  }
  if (location.kind === 'directory') return new DirectoryStorage(location.path);
  // One spelling per archive (`S3://b/p/` is `s3://b/p`): the location names its run lock too.
  const canonical = `s3://${location.bucket}${location.prefix === '' ? '' : `/${location.prefix}`}`;
  return new S3Storage(canonical, location.bucket, location.prefix, settings.s3);
}

/** The archive `target` names, with ARCHIVE_ENCRYPTION_KEY's keys to seal and open its files. */
export function openArchive(target: string, settings: Pick<OperationsSettings['archive'], 's3' | 'keys'>): Archive {
  return { storage: openArchiveStorage(target, settings), keyring: new ArchiveKeyring(settings.keys) };
}
