import assert from 'node:assert/strict';
import { test } from 'node:test';
import { customerUserId } from '../../../src/forwarding/forwarded-event.js';

test("a forwarded event's customer.user_id is read from the payment's metadata by the schema's rule, trimmed", () => {
  assert.equal(customerUserId({ provider: 'stripe', metadata: { user_id: ' u_1 ', course_id: 'c_1' } }), 'u_1');
  assert.equal(customerUserId({ provider: 'razorpay', metadata: { user_id: 'u_2' } }), 'u_2');
  assert.equal(customerUserId({ provider: 'payu', metadata: { udf1: 'u_3', user_id: 'not PayU' } }), 'u_3');
  assert.equal(customerUserId({ provider: 'stripe', metadata: { user_id: '   ' } }), null);
  assert.equal(customerUserId({ provider: 'stripe', metadata: {} }), null);
  assert.equal(customerUserId({ provider: 'toString', metadata: { user_id: 'u' } }), null, 'an unknown provider names nobody');
});
