/**
 * The fastify example, checked end to end from an installed package: a Stripe capture delivered 8
 * times at once, twice over, adds one ledger entry and tells the CRM once; no course tables.
 */
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exampleEnvironment, noCourseTables, sendDuplicates, waitFor } from '../check-support.mjs';
import { startFastifyExample } from './server.js';

// The team's CRM: records each call's Idempotency-Key.
const crmCalls: string[] = [];
const crm = createServer((request, response) => {
  crmCalls.push(String(request.headers['idempotency-key']));
  request.resume();
  response.writeHead(204).end();
});
crm.listen(0, '127.0.0.1');
await once(crm, 'listening');

const { env, secret } = await exampleEnvironment('fastify');
const example = await startFastifyExample(env, `http://127.0.0.1:${(crm.address() as AddressInfo).port}/top-ups`);
try {
  await sendDuplicates(`${example.url}/payments/webhooks/stripe`, secret, { payment: 'pi_fastify_1', user: 'u_grace', course: 'credits-100' });
  await waitFor(
    'the CRM told and the row marked sent',
    async () => crmCalls.length > 0 && (await example.inbox.database.selectFrom('outbox').select('status').where('kind', '=', 'crm_top_up').executeTakeFirst())?.status === 'sent',
  );
  const ledger = (await (await fetch(`${example.url}/credits/u_grace`)).json()) as Array<{ payment_key: string; amount: number }>;
  assert.deepEqual(
    ledger.map((entry) => entry.payment_key),
    ['stripe:pi_fastify_1'],
    'one ledger entry',
  );
  assert.ok(Number(ledger[0]!.amount) > 0, 'with the amount paid');
  assert.deepEqual(crmCalls, ['crm-top-up:stripe:pi_fastify_1'], 'the CRM told once');
  assert.equal((await fetch(`${example.url}/healthz`)).status, 200);
  await noCourseTables(example.inbox);
  console.log('fastify example: one ledger entry and one CRM call for 16 concurrent copies of one delivery');
} finally {
  await example.close();
  crm.close();
}
