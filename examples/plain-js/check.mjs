/**
 * The plain JavaScript example, checked end to end from an installed package, with no build step: a
 * Stripe capture delivered 8 times at once, twice over, opens one membership and tells the
 * door-access service once; no course tables.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { exampleEnvironment, noCourseTables, sendDuplicates, waitFor } from '../check-support.mjs';
import { startPlainJsExample } from './server.mjs';

// The team's door-access service: records each call's Idempotency-Key.
const accessCalls = [];
const doorAccess = createServer((request, response) => {
  accessCalls.push(String(request.headers['idempotency-key']));
  request.resume();
  response.writeHead(204).end();
});
doorAccess.listen(0, '127.0.0.1');
await once(doorAccess, 'listening');

const { env, secret } = await exampleEnvironment('plain-js');
const example = await startPlainJsExample(env, `http://127.0.0.1:${doorAccess.address().port}/access`);
try {
  await sendDuplicates(`${example.url}/webhooks/stripe`, secret, { payment: 'pi_plain_js_1', user: 'u_linus', course: 'gym-monthly' });
  await waitFor(
    'the door-access service told and the row marked sent',
    async () =>
      accessCalls.length > 0 && (await example.inbox.database.selectFrom('outbox').select('status').where('kind', '=', 'door_access').executeTakeFirst())?.status === 'sent',
  );
  const rows = await (await fetch(`${example.url}/memberships/u_linus`)).json();
  assert.deepEqual(rows, [{ payment_key: 'stripe:pi_plain_js_1', plan: 'gym-monthly', status: 'active' }], 'one membership');
  assert.deepEqual(accessCalls, ['door-access:stripe:pi_plain_js_1'], 'the door-access service told once');
  assert.equal((await fetch(`${example.url}/healthz`)).status, 200);
  await noCourseTables(example.inbox);
  console.log('plain JavaScript example: one membership and one door-access call for 16 concurrent copies of one delivery');
} finally {
  await example.close();
  doorAccess.close();
}
