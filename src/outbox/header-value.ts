/**
 * The bytes a header value built from provider data keeps as they are: RFC 7230's token characters
 * without `%` (the escape itself, so that the encoding can be undone), plus `:`, which separates the
 * parts of the keys this service builds (`fulfilment:stripe:pi_…`), so that a key of plain ids is sent
 * as it is.
 */
const KEPT = /^[A-Za-z0-9!#$&'*+.^_`|~:-]*$/;
const KEPT_BYTES = new Set(Array.from({ length: 0x80 }, (_, byte) => byte).filter((byte) => KEPT.test(String.fromCharCode(byte))));

/**
 * A header value for text that came from a provider, such as an idempotency key that holds a payment
 * id: every byte of its UTF-8 form other than a letter, a digit or one of ``!#$&'*+-.^_`|~:`` is
 * written as `%XX`. Any string gives a valid header value, the same one every time, and a key of plain
 * ids is left as it is; `decodeURIComponent` gives the text back (a lone UTF-16 surrogate, which no
 * stored id holds, as U+FFFD). Sent raw, a character outside Latin-1, a control character or CR/LF
 * makes every attempt fail before it leaves the process.
 */
export function headerValueOf(text: string): string {
  if (KEPT.test(text)) return text;
  let value = '';
  for (const byte of Buffer.from(text, 'utf8')) {
    value += KEPT_BYTES.has(byte) ? String.fromCharCode(byte) : `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return value;
}
