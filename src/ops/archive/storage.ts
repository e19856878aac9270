/**
 * Where an archive's files live: a local directory, or a prefix of an object store. File names are
 * flat (`2024-05-01.0001.jsonl.gz`, `manifest.json`). What must stay true of every kind: a file
 * written is whole or absent, never partial, and is durable when `write` resolves; the archive
 * deletes an event only after its file was read back from here.
 */
export interface ArchiveStorage {
  /** The archive's address as the operator gave it (a directory, `s3://bucket/prefix`), for messages and reports. */
  readonly location: string;
  /** The file's bytes, or null when there is no such file. */
  read(name: string): Promise<Buffer | null>;
  /** Writes the whole file under `name`, replacing any file of that name. */
  write(name: string, data: Buffer): Promise<void>;
  /** Deletes the file; nothing when there is none. */
  remove(name: string): Promise<void>;
  /**
   * Checks that the archive can be written (a directory made, a bucket that exists and takes these
   * credentials' writes) before any event is read for it, failing with the cause named; resolves to
   * the release. A directory also locks itself here against a second run; the Archiver's database
   * lock (run-lock.ts) is what keeps one run per location for every kind.
   */
  lock(): Promise<() => Promise<void>>;
}
