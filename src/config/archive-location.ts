/**
 * Where an archive lives, as ARCHIVE_TO (or ARCHIVE_DIR), `archive --to` and `restore --from` name
 * it: a local directory, or `s3://BUCKET/PREFIX` in an object store. Any other scheme is refused,
 * never taken as a directory: `s3:/bucket` or `gs://bucket` must not become a local folder.
 */
export type ArchiveLocation = { kind: 'directory'; path: string } | { kind: 's3'; bucket: string; prefix: string };

/** A scheme (`s3:`, `gs:`, `file:`...), as opposed to a directory path. */
const SCHEME = /^([a-z][a-z0-9+.-]*):/i;
/** S3's rules for a bucket name: 3-63 lower-case letters, digits, dots and hyphens, starting and ending with a letter or digit. */
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/** The location `text` names; an Error saying what is wrong with it otherwise. */
export function parseArchiveLocation(text: string): ArchiveLocation {
  const scheme = SCHEME.exec(text)?.[1]?.toLowerCase();
  // One letter is a Windows drive ("C:\archive"), not a scheme.
  if (scheme === undefined || scheme.length === 1) {
    if (text.trim() === '') throw new Error('is empty: give a directory or s3://bucket/prefix');
    return { kind: 'directory', path: text };
  }
  if (scheme !== 's3') throw new Error(`"${text}": the ${scheme}: scheme is not supported; give a directory or s3://bucket/prefix`);
  const match = /^s3:\/\/([^/]+)\/?(.*)$/i.exec(text);
  if (!match) throw new Error(`"${text}" is not s3://bucket/prefix`);
  const [, bucket = '', prefix = ''] = match;
  if (!BUCKET.test(bucket)) throw new Error(`"${text}": "${bucket}" is not an S3 bucket name (3-63 lower-case letters, digits, dots and hyphens)`);
  // A prefix is a folder of the bucket: its files are PREFIX/name, never PREFIXname.
  return { kind: 's3', bucket, prefix: prefix.replace(/\/+$/, '') };
}
