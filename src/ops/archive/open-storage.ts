import { parseArchiveLocation } from '../../config/archive-location.js';
import { OperationError } from '../errors.js';
import type { OperationsSettings } from '../../config/settings.js';
import { DirectoryStorage } from './directory-storage.js';
import { ArchiveKeyring } from './encryption.js';
import type { Archive } from './files.js';
import type { ArchiveStorage } from './storage.js';

/** The storage `target` names (see parseArchiveLocation); a location it refuses is a bad argument naming it. */
export function openArchiveStorage(target: string): ArchiveStorage {
  let location;
  try {
    location = parseArchiveLocation(target);
  } catch (error) {
    throw new OperationError(`archive location ${(error as Error).message}`, 'bad_argument');
  }
  if (location.kind === 'directory') return new DirectoryStorage(location.path);
  throw new OperationError(`archive location "${target}": object storage is not available in this build`, 'bad_argument');
}

/** The archive `target` names, with ARCHIVE_ENCRYPTION_KEY's keys to seal and open its files. */
export function openArchive(target: string, settings: Pick<OperationsSettings['archive'], 'keys'>): Archive {
  return { storage: openArchiveStorage(target), keyring: new ArchiveKeyring(settings.keys) };
}
