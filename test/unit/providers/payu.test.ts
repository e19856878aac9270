import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import { BadRequestError, SignatureError, UnsupportedMediaTypeError } from '../../../src/errors.js';
import type { VerifiedEvent } from '../../../src/model/delivery.js';
import { rupeesToPaise } from '../../../src/providers/payu/normalize.js';
import { createPayuVerifier } from '../../../src/providers/payu/verify.js';
import { PAYLOADS_DIR, payload, payloadJson } from '../../support/fixtures.js';

/** The made-up test credentials the constructed PayU samples were signed with (payloads/README.md). */
const KEY = 'TstK3y';
const SALT = 'TestSalt0123456789abcdefGHIJKLmn';
const FORM = 'application/x-www-form-urlencoded';
const verifier = createPayuVerifier({ merchantKey: KEY, merchantSalt: SALT });

/** `contentType: null` sends no Content-Type header at all. */
function verify(body: string | Buffer, contentType: string | null = FORM): VerifiedEvent {
  const headers = contentType === null ? {} : { 'content-type': contentType };
  return verifier.verify({ headers, body: Buffer.from(body), receivedAt: new Date() });
}

function formFields(text: string): Record<string, string> {
  return Object.fromEntries(new URLSearchParams(text));
}

/**
 * The reverse hash written out independently of src/ (docs/how-it-works.md, Verification):
 *   [additionalCharges|]SALT|status||||||udf5|udf4|udf3|udf2|udf1|email|firstname|productinfo|amount|txnid|key
 */
function referenceHash(fields: Record<string, string>, options: { additionalChargesPrefix: boolean }): string {
  const f = (name: string) => fields[name] ?? '';
  const udfs = ['udf5', 'udf4', 'udf3', 'udf2', 'udf1'].map(f);
  const parts = [SALT, f('status'), '', '', '', '', '', ...udfs, f('email'), f('firstname'), f('productinfo'), f('amount'), f('txnid'), KEY];
  if (options.additionalChargesPrefix) parts.unshift(f('additionalCharges'));
  return createHash('sha512').update(parts.join('|')).digest('hex');
}

/** The success sample's fields (URL-decoded), without its hash. */
function successFields(): Record<string, string> {
  const { hash: _hash, ...fields } = formFields(payload('payu', 'payment_success.form-urlencoded.txt').toString('utf8'));
  return fields;
}

const SIGNED_SAMPLES = readdirSync(path.join(PAYLOADS_DIR, 'payu')).filter((file) => file.endsWith('.form-urlencoded.txt') && !file.includes('.PARTIAL.'));

const ENCODINGS = [
  { name: 'form-urlencoded', contentType: FORM, encode: (text: string) => text },
  { name: 'form-urlencoded with a charset parameter', contentType: `${FORM}; charset=UTF-8`, encode: (text: string) => text },
  { name: 'the same fields as JSON', contentType: 'application/json', encode: (text: string) => JSON.stringify(formFields(text)) },
];

describe('payu verifier: constructed samples', () => {
  test('the four constructed, signed samples are present', () => {
    assert.deepEqual(SIGNED_SAMPLES.sort(), [
      'payment_failure.form-urlencoded.txt',
      'payment_success.form-urlencoded.txt',
      'payment_success_additionalCharges.form-urlencoded.txt',
      'payment_success_qr_empty_fields.form-urlencoded.txt',
    ]);
  });

  for (const file of SIGNED_SAMPLES) {
    for (const encoding of ENCODINGS) {
      test(`${file} verifies as ${encoding.name}; event id is txnid:status`, () => {
        const text = payload('payu', file).toString('utf8');
        const { txnid, status } = formFields(text);
        assert.ok(txnid && status);
        const event = verify(encoding.encode(text), encoding.contentType);
        assert.equal(event.provider, 'payu');
        assert.equal(event.eventId, `${txnid}:${status}`);
        assert.equal(event.eventType, `payment.${status}`);
      });
    }
  }

  test('the stored payload is a JSON object of the URL-decoded fields', () => {
    const event = verify(payload('payu', 'payment_success.form-urlencoded.txt'));
    const stored = JSON.parse(event.payload) as Record<string, string>;
    assert.equal(stored.email, 'rahul.sharma+test@example.com', '%2B decodes to +');
    assert.equal(stored.productinfo, 'Order #000123', '+ decodes to a space');
    assert.deepEqual(stored, payloadJson('payu', 'payment_success.decoded.json'));
  });
});

describe('payu verifier: field and media-type handling', () => {
  test('txnid with surrounding spaces is trimmed in the event id', () => {
    const fields = { ...successFields(), txnid: '  ORD000123A1 ' };
    const body = new URLSearchParams({ ...fields, hash: referenceHash(fields, { additionalChargesPrefix: false }) }).toString();
    assert.equal(verify(body).eventId, 'ORD000123A1:success');
  });

  test('the event id comes from hashed fields only: another mihpayid, unmappedstatus or any unhashed field is the same event', () => {
    const fields = successFields();
    const signed = (changed: Record<string, string>) => {
      const all = { ...fields, ...changed };
      return new URLSearchParams({ ...all, hash: referenceHash(all, { additionalChargesPrefix: false }) }).toString();
    };
    const original = verify(signed({}));
    const unhashed: Array<Record<string, string>> = [{ mihpayid: '403993715599999999' }, { unmappedstatus: 'auth' }, { bank_ref_num: 'forged' }, { net_amount_debit: '1.00' }];
    for (const changed of unhashed) {
      const replayed = verify(signed(changed));
      assert.equal(replayed.eventId, original.eventId, JSON.stringify(changed));
    }
  });

  for (const field of ['udf1', 'mihpayid']) {
    test(`a repeated form field (${field}) -> 400 malformed_body`, () => {
      const body = `${payload('payu', 'payment_success.form-urlencoded.txt').toString('utf8')}&${field}=other`;
      assert.throws(
        () => verify(body),
        (error: unknown) => error instanceof BadRequestError && error.code === 'malformed_body' && error.message.includes(field),
      );
    });
  }

  for (const contentType of ['text/plain', null]) {
    test(`content-type ${contentType ?? 'missing'} -> 415`, () => {
      assert.throws(
        () => verify(payload('payu', 'payment_success.form-urlencoded.txt'), contentType),
        (error: unknown) => error instanceof UnsupportedMediaTypeError && error.statusCode === 415,
      );
    });
  }

  test('additionalCharges present but empty is still prefixed (presence, not truthiness)', () => {
    const fields = { ...successFields(), additionalCharges: '' };
    const prefixed = new URLSearchParams({ ...fields, hash: referenceHash(fields, { additionalChargesPrefix: true }) }).toString();
    const unprefixed = new URLSearchParams({ ...fields, hash: referenceHash(fields, { additionalChargesPrefix: false }) }).toString();
    assert.equal(verify(prefixed).eventId, 'ORD000123A1:success');
    assert.throws(() => verify(unprefixed), SignatureError);
  });

  for (const file of ['refund_status_callback.success.docs-verbatim.json', 'refund_status_callback.failure.docs-verbatim.json']) {
    test(`refund status callback without a hash is rejected (${file})`, () => {
      assert.throws(() => verify(payload('payu', file), 'application/json'), SignatureError);
    });
  }
});

describe('payu verifier: bounded work before the hash is checked', () => {
  const malformed = (pattern: RegExp) => (error: unknown) => error instanceof BadRequestError && error.code === 'malformed_body' && pattern.test(error.message);

  test('JSON nested deeper than one level is refused before it is parsed, whatever is inside its strings', () => {
    assert.throws(() => verify('{"a":[[[]]]}', 'application/json'), malformed(/nests JSON deeper than 1 level/));
    assert.throws(() => verify(`{"a":${'['.repeat(100_000)}`, 'application/json'), malformed(/nests JSON deeper than 1 level/));
    // Brackets and escaped quotes inside a string are text, not nesting: the fields are read, then the hash refuses them.
    assert.throws(() => verify(JSON.stringify({ ...successFields(), udf3: '[{\\"[' }), 'application/json'), SignatureError);
  });

  test('more than 256 fields, as a form or as JSON: refused before the hash is computed', () => {
    const many = Array.from({ length: 257 }, (_, i) => `f${i}=1`).join('&');
    assert.throws(() => verify(many), malformed(/more than 256 fields/));
    assert.throws(() => verify(JSON.stringify(formFields(many)), 'application/json'), malformed(/more than 256 fields/));
    assert.throws(() => verify(Array.from({ length: 256 }, (_, i) => `f${i}=1`).join('&')), SignatureError, '256 fields are read');
  });
});

describe('rupeesToPaise', () => {
  for (const [amount, paise] of [
    ['1500.00', 150000],
    ['23.6', 2360],
    ['0.05', 5],
    ['40', 4000],
    ['1e3', null],
    ['-1', null],
    ['12.345', null],
    ['', null],
  ] as const) {
    test(`${JSON.stringify(amount)} -> ${paise}`, () => {
      assert.equal(rupeesToPaise(amount), paise);
    });
  }
});
