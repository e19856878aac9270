import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { CreateBucketCommand, GetObjectCommand, HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';

/** The one key pair s3rver accepts; any other is refused as an unknown key or a bad signature. */
export const S3RVER_CREDENTIALS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };

export interface TestS3 {
  /** http://127.0.0.1:PORT */
  endpoint: string;
  /**
   * What a process needs to reach it, the CLI's environment as loadConfig's: S3_ENDPOINT,
   * S3_FORCE_PATH_STYLE, AWS_REGION and the credentials. The instance metadata service is turned
   * off, so that no credential lookup ever leaves this machine.
   */
  env: Record<string, string>;
  /** A new bucket with a name of its own (`wi-<label>-<random>`). */
  createBucket(label: string): Promise<string>;
  /** Every key under `prefix`, sorted. */
  keys(bucket: string, prefix?: string): Promise<string[]>;
  /** The object's bytes, or null. */
  get(bucket: string, key: string): Promise<Buffer | null>;
  /** The storage class S3 reports for the object (STANDARD when none was given). */
  storageClass(bucket: string, key: string): Promise<string>;
  stop(): Promise<void>;
}

/**
 * A real S3-compatible server (s3rver) for one test file: on a free port of 127.0.0.1, its objects in
 * a temporary directory removed on stop. It checks signatures, so refused credentials are real. The
 * test process gets its credentials in its own environment, where the SDK's default chain, which the
 * archive uses, looks first.
 */
export async function startS3Server(): Promise<TestS3> {
  const directory = await mkdtemp(join(tmpdir(), 'wi-s3rver-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const env = { S3_ENDPOINT: endpoint, S3_FORCE_PATH_STYLE: 'true', AWS_REGION: 'us-east-1', AWS_EC2_METADATA_DISABLED: 'true', ...S3RVER_CREDENTIALS };
  Object.assign(process.env, env);
  const client = new S3Client({
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: S3RVER_CREDENTIALS.AWS_ACCESS_KEY_ID, secretAccessKey: S3RVER_CREDENTIALS.AWS_SECRET_ACCESS_KEY },
  });
  return {
    endpoint,
    env,
    async createBucket(label) {
      const bucket = `wi-${label}-${randomBytes(4).toString('hex')}`;
      await client.send(new CreateBucketCommand({ Bucket: bucket }));
      return bucket;
    },
    async keys(bucket, prefix = '') {
      const keys: string[] = [];
      let token: string | undefined;
      do {
        const page = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
        keys.push(...(page.Contents ?? []).map((object) => object.Key!));
        token = page.NextContinuationToken;
      } while (token);
      return keys.sort();
    },
    async get(bucket, key) {
      try {
        const response = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
        return Buffer.from(await response.Body!.transformToByteArray());
      } catch (error) {
        if ((error as Error).name === 'NoSuchKey') return null;
        throw error;
      }
    },
    async storageClass(bucket, key) {
      return (await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).StorageClass ?? 'STANDARD';
    },
    async stop() {
      client.destroy();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
