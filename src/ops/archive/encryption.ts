import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { ArchiveKey } from '../../config/settings.js';
import { OperationError } from '../errors.js';

/**
 * An encrypted archive file: `WIAE`, a format byte, the key id (its length, then its bytes), a
 * 12-byte IV, the AES-256-GCM ciphertext of the gzip file, and the 16-byte tag. The header and the
 * file's name are authenticated with it, so a file cannot be passed off under another name or key id.
 */
const MAGIC = Buffer.from('WIAE', 'ascii');
const FORMAT = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The key id an encrypted file names in its header; null for a file written without a key. */
export function sealedKeyId(stored: Buffer): string | null {
  if (stored.length < MAGIC.length + 2 || !stored.subarray(0, MAGIC.length).equals(MAGIC)) return null;
  const idLength = stored[MAGIC.length + 1]!;
  return stored.subarray(MAGIC.length + 2, MAGIC.length + 2 + idLength).toString('ascii');
}

/** ARCHIVE_ENCRYPTION_KEY's keys at work: the first seals what is written, each opens what it sealed. */
export class ArchiveKeyring {
  private readonly keys: Map<string, Buffer>;
  /** The key new files are sealed with; null: they are written unencrypted. */
  readonly sealingKeyId: string | null;

  constructor(keys: readonly ArchiveKey[]) {
    this.keys = new Map(keys.map((key) => [key.id, Buffer.from(key.secret, 'base64')]));
    this.sealingKeyId = keys[0]?.id ?? null;
  }

  /** `plain` as it is stored under `name`: sealed with the first key, or as it is without one. */
  seal(name: string, plain: Buffer): Buffer {
    if (this.sealingKeyId === null) return plain;
    const id = Buffer.from(this.sealingKeyId, 'ascii');
    const header = Buffer.concat([MAGIC, Buffer.from([FORMAT, id.length]), id, randomBytes(IV_BYTES)]);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.sealingKeyId)!, header.subarray(header.length - IV_BYTES));
    cipher.setAAD(Buffer.concat([header, Buffer.from(name, 'utf8')]));
    return Buffer.concat([header, cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  }

  /**
   * The file `name` of `location` as it was before sealing. Refuses, naming the file, one whose key
   * is not listed (naming the key id it needs) and one that fails authentication; a file written
   * without a key is returned as it is.
   */
  open(name: string, stored: Buffer, location: string): Buffer {
    const keyId = sealedKeyId(stored);
    if (keyId === null) return stored;
    const where = `${name} in ${location}`;
    const format = stored[MAGIC.length];
    if (format !== FORMAT) throw new OperationError(`${where} is encrypted in a format this version does not read (${format})`, 'archive_damaged');
    const key = this.keys.get(keyId);
    if (!key) {
      const listed = this.keys.size === 0 ? 'ARCHIVE_ENCRYPTION_KEY is not set' : `ARCHIVE_ENCRYPTION_KEY lists ${[...this.keys.keys()].join(', ')}`;
      throw new OperationError(`${where} is encrypted with key id ${keyId}, which is not configured (${listed}); add that key to ARCHIVE_ENCRYPTION_KEY`, 'archive_key_missing');
    }
    const headerLength = MAGIC.length + 2 + keyId.length + IV_BYTES;
    if (stored.length < headerLength + TAG_BYTES) throw new OperationError(`${where} is cut short: it is not a whole encrypted archive file`, 'archive_damaged');
    const header = stored.subarray(0, headerLength);
    const decipher = createDecipheriv('aes-256-gcm', key, header.subarray(headerLength - IV_BYTES));
    decipher.setAAD(Buffer.concat([header, Buffer.from(name, 'utf8')]));
    decipher.setAuthTag(stored.subarray(stored.length - TAG_BYTES));
    try {
      return Buffer.concat([decipher.update(stored.subarray(headerLength, stored.length - TAG_BYTES)), decipher.final()]);
    } catch {
      throw new OperationError(`${where} fails authentication under key id ${keyId}: it was altered, or the key with that id is not the one that wrote it`, 'archive_damaged');
    }
  }
}
