/**
 * The Express example, checked end to end from an installed package: a Stripe capture delivered 8
 * times at once, twice over, grants one licence and spools one welcome e-mail; no course tables.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { exampleEnvironment, noCourseTables, sendDuplicates, waitFor } from '../check-support.mjs';
import { startExpressExample } from './server.js';
import type { LicencesTable } from './licences.js';

const { env, dir, secret } = await exampleEnvironment('express');
const spool = join(dir, 'welcome-emails.jsonl');
const example = await startExpressExample(env, spool);
try {
  await sendDuplicates(`${example.url}/payments/webhooks/stripe`, secret, { payment: 'pi_express_1', user: 'u_ada', course: 'pro-plan' });
  const lines = async () => (await readFile(spool, 'utf8').catch(() => '')).split('\n').filter(Boolean);
  await waitFor(
    'the welcome e-mail spooled and marked sent',
    async () =>
      (await lines()).length > 0 && (await example.inbox.database.selectFrom('outbox').select('status').where('kind', '=', 'welcome_email').executeTakeFirst())?.status === 'sent',
  );
  const licences = (await (await fetch(`${example.url}/licences/u_ada`)).json()) as LicencesTable[];
  assert.deepEqual(
    licences.map((licence) => [licence.payment_key, licence.product]),
    [['stripe:pi_express_1', 'pro-plan']],
    'one licence',
  );
  assert.deepEqual(
    (await lines()).map((line) => (JSON.parse(line) as { key: string }).key),
    ['welcome:stripe:pi_express_1'],
    'one welcome e-mail',
  );
  await noCourseTables(example.inbox);
  console.log('express example: one licence and one welcome e-mail for 16 concurrent copies of one delivery');
} finally {
  await example.close();
}
