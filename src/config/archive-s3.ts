import type { EnvReader } from './environment.js';
import type { ArchiveS3Settings } from './settings.js';

/**
 * The storage classes an archive file may be written in. GLACIER and DEEP_ARCHIVE are left out on
 * purpose: their objects must be restored before they can be read, and the archive reads each file
 * back before it deletes the file's events (GLACIER_IR is the instant-retrieval class for that).
 */
export const ARCHIVE_STORAGE_CLASSES = ['STANDARD', 'STANDARD_IA', 'ONEZONE_IA', 'INTELLIGENT_TIERING', 'GLACIER_IR', 'REDUCED_REDUNDANCY'] as const;

/** The region S3 is addressed in when AWS_REGION is not set: the SDK has no default of its own. */
export const DEFAULT_AWS_REGION = 'us-east-1';

/**
 * The object store behind an `s3://` archive. Credentials are not read here: the SDK's default
 * chain finds them (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE, an instance role), so
 * they are never part of the configuration that `config` shows.
 */
export function readArchiveS3(read: EnvReader): ArchiveS3Settings {
  const region = read.string('AWS_REGION', DEFAULT_AWS_REGION);
  if (!/^[a-z0-9-]{2,32}$/.test(region)) read.problem(`AWS_REGION must be a region name like eu-west-1 (got "${region}")`);
  const endpointUrl = read.url('S3_ENDPOINT', ['http:', 'https:'], 'http://127.0.0.1:9000 for MinIO, https://ACCOUNT.r2.cloudflarestorage.com for R2') ?? null;
  const forcePathStyle = read.boolean('S3_FORCE_PATH_STYLE', false);
  const storageClass = read.string('ARCHIVE_STORAGE_CLASS', '') || null;
  if (storageClass !== null && !(ARCHIVE_STORAGE_CLASSES as readonly string[]).includes(storageClass)) {
    const hint = ['GLACIER', 'DEEP_ARCHIVE'].includes(storageClass)
      ? `: ${storageClass} objects cannot be read back without a restore, which the archive needs; use GLACIER_IR`
      : '';
    read.problem(`ARCHIVE_STORAGE_CLASS must be one of ${ARCHIVE_STORAGE_CLASSES.join(', ')} (got "${storageClass}")${hint}`);
  }
  return { region, endpointUrl, forcePathStyle, storageClass };
}
