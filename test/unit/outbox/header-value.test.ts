import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import { headerValueOf } from '../../../src/outbox/header-value.js';

/** A header value any HTTP stack takes: visible ASCII only, so no byte is read as another charset's. */
const VISIBLE_ASCII = /^[\x21-\x7e]*$/;

/** Any UTF-16 code unit (lone surrogates too) or any astral character. */
const anyText = fc.string({
  unit: fc.oneof(
    fc.integer({ min: 0, max: 0xffff }).map((unit) => String.fromCharCode(unit)),
    fc.integer({ min: 0x10000, max: 0x10ffff }).map((point) => String.fromCodePoint(point)),
  ),
});

test('any string, control characters, CR/LF, lone surrogates and all, gives a valid header value that decodes back to it', () => {
  fc.assert(
    fc.property(anyText, (text) => {
      const value = headerValueOf(text);
      assert.match(value, VISIBLE_ASCII);
      assert.doesNotThrow(() => new Headers({ 'idempotency-key': value }));
      assert.equal(headerValueOf(text), value, 'the same value every time');
      assert.equal(decodeURIComponent(value), text.replace(/\p{Cs}/gu, '\uFFFD'), 'a lone surrogate comes back as U+FFFD');
    }),
    { numRuns: 2000 },
  );
});

test('a key of plain ids is sent as it is; everything else is percent-encoded UTF-8, % included', () => {
  assert.equal(headerValueOf('fulfilment:stripe:pi_3Pq-x.y~1'), 'fulfilment:stripe:pi_3Pq-x.y~1');
  assert.equal(headerValueOf(''), '');
  assert.equal(headerValueOf('fulfilment:stripe:pi_é€😀'), 'fulfilment:stripe:pi_%C3%A9%E2%82%AC%F0%9F%98%80');
  assert.equal(headerValueOf(' a\r\nb\t"%41"/ '), '%20a%0D%0Ab%09%22%2541%22%2F%20');
  // Two keys that differ only by what looks like an escape stay two header values.
  assert.notEqual(headerValueOf('pi_%41'), headerValueOf('pi_A'));
});
