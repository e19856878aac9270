/**
 * What went wrong talking to an object store, in words an operator can act on: the S3 error code
 * (NoSuchBucket, InvalidAccessKeyId, AccessDenied...) always named, with what it means here.
 */
export function describeS3Error(error: unknown, bucket: string): string {
  const code = s3ErrorCode(error);
  const message = error instanceof Error ? error.message : String(error);
  const detail = message && message !== code ? `${code}: ${message}` : code;
  switch (code) {
    case 'NoSuchBucket':
    case 'NotFound':
      return `the bucket "${bucket}" does not exist (${detail})`;
    case 'InvalidAccessKeyId':
    case 'SignatureDoesNotMatch':
    case 'ExpiredToken':
    case 'InvalidToken':
    case 'TokenRefreshRequired':
      return `the credentials were refused (${detail})`;
    case 'AccessDenied':
    case 'Forbidden':
    case 'AllAccessDisabled':
      return `access to the bucket "${bucket}" was denied to these credentials (${detail})`;
    case 'CredentialsProviderError':
      return `no AWS credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or AWS_PROFILE, or run with an instance role (${detail})`;
    case 'ECONNREFUSED':
    case 'ENOTFOUND':
    case 'ETIMEDOUT':
    case 'ECONNRESET':
    case 'EAI_AGAIN':
      return `the object store could not be reached (${detail}); check S3_ENDPOINT and the network`;
    default:
      return detail;
  }
}

/** The S3 error code of an SDK error; a network error's system code; else the error's name. */
export function s3ErrorCode(error: unknown): string {
  if (typeof error !== 'object' || error === null) return 'Error';
  const { Code, code, name, $metadata } = error as { Code?: unknown; code?: unknown; name?: unknown; $metadata?: unknown };
  if (typeof Code === 'string') return Code;
  // An answer from the store: its name is the error code (HEAD answers carry no body, only NotFound or Forbidden).
  if ($metadata !== undefined && typeof name === 'string' && name !== 'Error') return name;
  if (typeof code === 'string') return code;
  return typeof name === 'string' ? name : 'Error';
}
