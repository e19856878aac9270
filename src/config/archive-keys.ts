import type { ArchiveKey } from './settings.js';

/**
 * ARCHIVE_ENCRYPTION_KEY: `KEY_ID:BASE64_32_BYTES`, or several separated by commas for a rotation.
 * The first encrypts what is written from now on; every one listed decrypts, so files written under
 * an older key stay readable until `archive rekey` has moved them to the first.
 */
const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;

/** The keys `text` lists; an Error saying which entry is wrong otherwise (never quoting a key). */
export function parseArchiveKeys(text: string): ArchiveKey[] {
  const keys = text.split(',').map((entry, index) => {
    const trimmed = entry.trim();
    const colon = trimmed.indexOf(':');
    const id = colon < 0 ? '' : trimmed.slice(0, colon);
    const secret = colon < 0 ? '' : trimmed.slice(colon + 1);
    const place = `entry ${index + 1}`;
    if (!KEY_ID.test(id)) throw new Error(`${place} must be KEY_ID:BASE64_32_BYTES, its id 1-32 letters, digits, "_" or "-"`);
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(secret) || Buffer.from(secret, 'base64').length !== 32) {
      throw new Error(`${place} (key id ${id}) must hold 32 bytes in base64 after the colon (openssl rand -base64 32 makes one)`);
    }
    return { id, secret };
  });
  const ids = keys.map((key) => key.id);
  const repeated = ids.find((id, index) => ids.indexOf(id) !== index);
  if (repeated !== undefined) throw new Error(`names key id ${repeated} twice: each key needs an id of its own`);
  return keys;
}
