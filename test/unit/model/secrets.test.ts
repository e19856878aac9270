import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { HIDDEN, isSecretName, shownHeaders, shownPayload } from '../../../src/model/secrets.js';

describe('what may be shown of a stored event', () => {
  test('signatures, credentials and secrets are secret by name; ids and content types are not', () => {
    for (const name of ['stripe-signature', 'x-razorpay-signature', 'Authorization', 'cookie', 'set-cookie', 'hash', 'client_secret', 'password']) {
      assert.ok(isSecretName(name), name);
    }
    for (const name of ['content-type', 'x-razorpay-event-id', 'id', 'amount', 'key', 'txnid']) assert.ok(!isSecretName(name), name);
  });

  test('headers: the secret ones are left out', () => {
    const stored = JSON.stringify({ 'stripe-signature': 't=1,v1=SIG', 'x-razorpay-signature': 'SIG', 'x-razorpay-event-id': 'evt_1', 'content-type': 'application/json' });
    assert.deepEqual(shownHeaders(stored), { 'x-razorpay-event-id': 'evt_1', 'content-type': 'application/json' });
  });

  test('a payload without a secret field is the stored text itself, byte for byte', () => {
    const stored = '{\n  "id": "evt_1",\n  "note": "caf\\u00e9",\n  "data": { "object": { "client_secret": null } }\n}\n';
    assert.equal(shownPayload(stored), stored);
    assert.equal(shownPayload('not json'), 'not json');
  });

  test("PayU's hash and Stripe's client_secret are hidden, at any depth; every other field is kept", () => {
    const payu = JSON.stringify({ key: 'K', txnid: 't1', status: 'success', hash: 'a'.repeat(128) });
    assert.equal(shownPayload(payu), JSON.stringify({ key: 'K', txnid: 't1', status: 'success', hash: HIDDEN }));
    const stripe = JSON.stringify({ id: 'evt_1', data: { object: { id: 'pi_1', client_secret: 'pi_1_secret_XYZ', list: [{ signature: 'S' }] } } }, null, 2);
    assert.deepEqual(JSON.parse(shownPayload(stripe)), { id: 'evt_1', data: { object: { id: 'pi_1', client_secret: HIDDEN, list: [{ signature: HIDDEN }] } } });
  });

  test('a secret given twice, or written with escapes, does not survive', () => {
    const shown = shownPayload('{"hash":"FIRST","hash":"SECOND","client\\u005fsecret":"THIRD"}');
    assert.doesNotMatch(shown, /FIRST|SECOND|THIRD/);
  });
});
