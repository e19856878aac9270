import { hostname } from 'node:os';
import type { S3Client, StorageClass } from '@aws-sdk/client-s3';
import type { ArchiveS3Settings } from '../../config/settings.js';
import { OperationError } from '../errors.js';
import { MANIFEST_FILE } from './manifest.js';
import { describeS3Error, s3ErrorCode } from './s3-error.js';
import type { ArchiveStorage } from './storage.js';

/**
 * Who is archiving into the prefix now (host, pid, start), written when a run starts and removed when
 * it ends. Writing it is what proves, before any event is read, that the bucket exists and takes
 * these credentials' writes. It is not the lock: the Archiver's database lock is (see run-lock.ts).
 */
export const RUN_MARKER = '.archive-run.json';

/** Bounds on one request: a store that stops answering fails the run instead of holding its lock forever. */
const CONNECTION_TIMEOUT_MS = 10_000;
const SOCKET_IDLE_TIMEOUT_MS = 60_000;

interface Connection {
  sdk: typeof import('@aws-sdk/client-s3');
  Upload: typeof import('@aws-sdk/lib-storage').Upload;
  client: S3Client;
}

/**
 * An archive under a prefix of an S3 bucket (or of an S3-compatible store: S3_ENDPOINT), its files at
 * `PREFIX/name`. A PUT, and a multipart upload once completed, replaces an object whole, and S3 reads
 * its own writes: the port's "whole or absent" and read-back hold as they do for a directory. The SDK
 * is loaded on first use, so commands that never touch an object store do not pay for loading it.
 */
export class S3Storage implements ArchiveStorage {
  private connection: Promise<Connection> | null = null;

  constructor(
    readonly location: string,
    private readonly bucket: string,
    private readonly prefix: string,
    private readonly settings: ArchiveS3Settings,
  ) {}

  async read(name: string): Promise<Buffer | null> {
    const { sdk, client } = await this.connect();
    try {
      const response = await client.send(new sdk.GetObjectCommand({ Bucket: this.bucket, Key: this.key(name) }));
      if (!response.Body) return Buffer.alloc(0);
      return Buffer.from(await response.Body.transformToByteArray());
    } catch (error) {
      if (s3ErrorCode(error) === 'NoSuchKey') return null;
      throw this.failure('reading', name, error);
    }
  }

  /** Multipart above the part size, so a large file goes up in parts, and a failed upload is aborted, leaving nothing. */
  async write(name: string, data: Buffer): Promise<void> {
    const { client, Upload } = await this.connect();
    // The storage class is for the archive files; the manifest is rewritten every file and read every run.
    const storageClass = name === MANIFEST_FILE ? undefined : ((this.settings.storageClass ?? undefined) as StorageClass | undefined);
    const upload = new Upload({ client, params: { Bucket: this.bucket, Key: this.key(name), Body: data, StorageClass: storageClass }, leavePartsOnError: false });
    try {
      await upload.done();
    } catch (error) {
      throw this.failure('writing', name, error);
    }
  }

  async remove(name: string): Promise<void> {
    const { sdk, client } = await this.connect();
    try {
      await client.send(new sdk.DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(name) }));
    } catch (error) {
      throw this.failure('removing', name, error);
    }
  }

  /** Checks the archive takes writes (the run marker); one run at a time is the database lock's job. */
  async lock(): Promise<() => Promise<void>> {
    const { sdk, client } = await this.connect();
    const marker = { host: hostname(), pid: process.pid, startedAt: new Date().toISOString() };
    try {
      await client.send(new sdk.PutObjectCommand({ Bucket: this.bucket, Key: this.key(RUN_MARKER), Body: JSON.stringify(marker), ContentType: 'application/json' }));
    } catch (error) {
      throw new OperationError(`cannot write to the archive ${this.location}: ${describeS3Error(error, this.bucket)}`, 'archive_unwritable');
    }
    return async () => {
      // A marker left behind says who ran last and harms nothing: a run's outcome never hangs on removing it.
      await client.send(new sdk.DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(RUN_MARKER) })).catch(() => undefined);
    };
  }

  private key(name: string): string {
    return this.prefix === '' ? name : `${this.prefix}/${name}`;
  }

  private failure(action: string, name: string, error: unknown): OperationError {
    return new OperationError(`${action} ${name} in ${this.location} failed: ${describeS3Error(error, this.bucket)}`, 'archive_storage_failed');
  }

  private connect(): Promise<Connection> {
    this.connection ??= (async () => {
      const [sdk, { Upload }] = await Promise.all([import('@aws-sdk/client-s3'), import('@aws-sdk/lib-storage')]);
      const { region, endpointUrl, forcePathStyle } = this.settings;
      const client = new sdk.S3Client({
        region,
        forcePathStyle,
        requestHandler: { connectionTimeout: CONNECTION_TIMEOUT_MS, socketTimeout: SOCKET_IDLE_TIMEOUT_MS },
        ...(endpointUrl === null
          ? {}
          : {
              endpoint: endpointUrl,
              // Not every S3-compatible store accepts the SDK's newer checksum headers; each file's
              // SHA-256 in the manifest is checked on every read anyway.
              requestChecksumCalculation: 'WHEN_REQUIRED',
              responseChecksumValidation: 'WHEN_REQUIRED',
            }),
      });
      return { sdk, Upload, client };
    })();
    return this.connection;
  }
}
