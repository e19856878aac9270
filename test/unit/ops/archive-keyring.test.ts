import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { parseArchiveKeys } from '../../../src/config/archive-keys.js';
import { loadConfig, readConfig } from '../../../src/config/load.js';
import { maskedConfig, maskedVariables } from '../../../src/config/display.js';
import { ArchiveKeyring, sealedKeyId } from '../../../src/ops/archive/encryption.js';

const secret = () => randomBytes(32).toString('base64');

test('ARCHIVE_ENCRYPTION_KEY: KEY_ID:BASE64_32_BYTES, several for a rotation', () => {
  const [a, b] = [secret(), secret()];
  assert.deepEqual(parseArchiveKeys(`k2:${b}, k1:${a}`), [
    { id: 'k2', secret: b },
    { id: 'k1', secret: a },
  ]);
  for (const [text, words] of [
    [a, /entry 1 must be KEY_ID:BASE64_32_BYTES/],
    [`k1:${randomBytes(16).toString('base64')}`, /entry 1 \(key id k1\) must hold 32 bytes/],
    [`k1:${a},k 2:${b}`, /entry 2 must be KEY_ID/],
    [`k1:${a},k1:${b}`, /names key id k1 twice/],
    [`k1:not base64!`, /must hold 32 bytes/],
  ] as const) {
    assert.throws(() => parseArchiveKeys(text), words, text);
    // A problem names the variable and never shows a key.
    const error = (() => {
      try {
        loadConfig({ ARCHIVE_ENCRYPTION_KEY: text });
      } catch (caught) {
        return (caught as Error).message;
      }
      return '';
    })();
    assert.match(error, /ARCHIVE_ENCRYPTION_KEY/);
    assert.ok(!error.includes(a) && !error.includes(b), 'no key in the message');
  }
});

test('the key is masked wherever the configuration is shown', () => {
  const key = secret();
  const reading = readConfig({ ARCHIVE_ENCRYPTION_KEY: `k1:${key}`, ARCHIVE_TO: '/var/archive' });
  const shown = JSON.stringify([maskedConfig(reading.config), maskedVariables(reading.variables)]);
  assert.ok(!shown.includes(key), shown);
  assert.deepEqual(reading.notices, []);
});

test('an archive configured without a key is said to be unencrypted', () => {
  assert.deepEqual(readConfig({ ARCHIVE_TO: '/var/archive' }).notices, [
    'ARCHIVE_ENCRYPTION_KEY is not set: archive files are written unencrypted (docs/operations.md#encryption-at-rest)',
  ]);
  assert.deepEqual(readConfig({}).notices, [], 'no archive, nothing to say');
});

test('sealed under the first key, opened by any listed; bound to its name and its bytes', () => {
  const [k1, k2] = [
    { id: 'k1', secret: secret() },
    { id: 'k2', secret: secret() },
  ];
  const plain = randomBytes(5000);
  const sealed = new ArchiveKeyring([k1, k2]).seal('2024-05-01.0001.jsonl.gz', plain);
  assert.equal(sealedKeyId(sealed), 'k1');
  assert.deepEqual(new ArchiveKeyring([k2, k1]).open('2024-05-01.0001.jsonl.gz', sealed, 'archive'), plain);
  assert.throws(() => new ArchiveKeyring([k2]).open('2024-05-01.0001.jsonl.gz', sealed, 'archive'), /key id k1, which is not configured \(ARCHIVE_ENCRYPTION_KEY lists k2\)/);
  assert.throws(() => new ArchiveKeyring([k1]).open('2024-05-02.0001.jsonl.gz', sealed, 'archive'), /2024-05-02\.0001\.jsonl\.gz in archive fails authentication under key id k1/);
  assert.throws(() => new ArchiveKeyring([{ id: 'k1', secret: secret() }]).open('2024-05-01.0001.jsonl.gz', sealed, 'archive'), /fails authentication/);
  const cut = sealed.subarray(0, 20);
  assert.throws(() => new ArchiveKeyring([k1]).open('2024-05-01.0001.jsonl.gz', cut, 'archive'), /cut short/);
  // Without a key, files are written and read as they are.
  const none = new ArchiveKeyring([]);
  assert.equal(none.sealingKeyId, null);
  assert.deepEqual(none.seal('f', plain), plain);
  assert.deepEqual(none.open('f', plain, 'archive'), plain);
  // Every sealing draws a fresh IV: the same file sealed twice differs.
  assert.notDeepEqual(new ArchiveKeyring([k1]).seal('f', plain), new ArchiveKeyring([k1]).seal('f', plain));
});
