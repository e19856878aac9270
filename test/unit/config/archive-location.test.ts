import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseArchiveLocation } from '../../../src/config/archive-location.js';
import { loadConfig } from '../../../src/config/load.js';

test('an archive location is a directory or s3://bucket/prefix', () => {
  assert.deepEqual(parseArchiveLocation('/var/archive'), { kind: 'directory', path: '/var/archive' });
  assert.deepEqual(parseArchiveLocation('archive'), { kind: 'directory', path: 'archive' });
  assert.deepEqual(parseArchiveLocation('C:\\archive'), { kind: 'directory', path: 'C:\\archive' }, 'a drive letter is not a scheme');
  assert.deepEqual(parseArchiveLocation('s3://payments-archive/webhooks/'), { kind: 's3', bucket: 'payments-archive', prefix: 'webhooks' });
  assert.deepEqual(parseArchiveLocation('s3://payments-archive'), { kind: 's3', bucket: 'payments-archive', prefix: '' });
  assert.deepEqual(parseArchiveLocation('S3://payments-archive/a/b'), { kind: 's3', bucket: 'payments-archive', prefix: 'a/b' });
});

test('any other scheme is refused, never taken as a directory', () => {
  for (const [text, words] of [
    ['gs://bucket/prefix', /gs: scheme is not supported/],
    ['file:///var/archive', /file: scheme is not supported/],
    ['s3:bucket', /is not s3:\/\/bucket\/prefix/],
    ['s3:/bucket/prefix', /is not s3:\/\/bucket\/prefix/],
    ['s3://ab/prefix', /not an S3 bucket name/],
    ['s3://Upper/prefix', /not an S3 bucket name/],
    ['', /is empty/],
  ] as const) {
    assert.throws(() => parseArchiveLocation(text), words, text);
  }
});

test('ARCHIVE_TO is where archives go; ARCHIVE_DIR, its first name, still works', () => {
  assert.equal(loadConfig({ ARCHIVE_TO: 's3://payments-archive/webhooks' }).operations.archive.to, 's3://payments-archive/webhooks');
  assert.equal(loadConfig({ ARCHIVE_DIR: '/var/archive' }).operations.archive.to, '/var/archive');
  assert.equal(loadConfig({ ARCHIVE_TO: '/var/archive', ARCHIVE_DIR: '/var/archive' }).operations.archive.to, '/var/archive');
  assert.equal(loadConfig({}).operations.archive.to, null);
});
