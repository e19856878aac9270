import assert from 'node:assert/strict';
import { test } from 'node:test';
import { maskedConfig, maskedVariables, variableLines } from '../../../src/config/display.js';
import { loadConfig, readConfig } from '../../../src/config/load.js';
import { ConfigError } from '../../../src/errors.js';

const CANARY = 'CANARYs3cr3tCANARY0123456789';

test('an s3:// archive: region, endpoint, path style and storage class, with their defaults', () => {
  assert.deepEqual(loadConfig({}).operations.archive.s3, { region: 'us-east-1', endpointUrl: null, forcePathStyle: false, storageClass: null });
  assert.deepEqual(
    loadConfig({
      ARCHIVE_TO: 's3://payments-archive/webhooks',
      AWS_REGION: 'eu-west-1',
      S3_ENDPOINT: 'http://minio:9000',
      S3_FORCE_PATH_STYLE: 'true',
      ARCHIVE_STORAGE_CLASS: 'GLACIER_IR',
    }).operations.archive.s3,
    { region: 'eu-west-1', endpointUrl: 'http://minio:9000', forcePathStyle: true, storageClass: 'GLACIER_IR' },
  );
});

test('a storage class the archive cannot read back is refused, saying why', () => {
  assert.throws(
    () => loadConfig({ ARCHIVE_STORAGE_CLASS: 'GLACIER' }),
    (error: unknown) => error instanceof ConfigError && /ARCHIVE_STORAGE_CLASS .*GLACIER objects cannot be read back without a restore.*use GLACIER_IR/.test(error.message),
  );
  assert.throws(() => loadConfig({ ARCHIVE_STORAGE_CLASS: 'COLD' }), /ARCHIVE_STORAGE_CLASS must be one of STANDARD, STANDARD_IA, .* \(got "COLD"\)/);
});

test("the AWS SDK's own variables are not ours to flag, and their secrets are never shown", () => {
  const env = {
    ARCHIVE_TO: 's3://payments-archive/webhooks',
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'AKIAEXAMPLEKEY',
    AWS_SECRET_ACCESS_KEY: CANARY,
    AWS_SESSION_TOKEN: CANARY,
    AWS_PROFILE: 'archive',
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    S3_ENDPOINT: 'https://archive:pass@minio.internal:9000',
  };
  const { config, variables, unknown } = readConfig(env, {});
  assert.deepEqual(unknown, []);
  const shown = JSON.stringify(maskedConfig(config)) + JSON.stringify(maskedVariables(variables)) + variableLines(variables).join('\n');
  assert.ok(!shown.includes(CANARY), 'no AWS secret in what config shows');
  assert.ok(!shown.includes('pass@'), 'an endpoint URL is masked like any URL');
  assert.ok(!variables.some((v) => v.name.startsWith('AWS_') && v.name !== 'AWS_REGION'), 'credentials are the SDK’s, not settings');
  // Our own S3_ variables are still checked for misspellings.
  assert.deepEqual(
    readConfig({ S3_ENDPONT: 'http://minio:9000' }, {}).unknown.map((u) => u.resembles),
    ['S3_ENDPOINT'],
  );
});
