/**
 * webhook-inbox inside an Express application: the inbox records and processes the payment
 * webhooks, the application keeps its own routes. Run it with `node dist/express/server.js` after
 * `npx tsc -p examples` (the environment configures the inbox: STRIPE_WEBHOOK_SECRET, DATABASE_URL, ...).
 */
import type { AddressInfo } from 'node:net';
import { pathToFileURL } from 'node:url';
import express from 'express';
import { answerDelivery, createInbox, loadConfig, type Inbox } from 'webhook-inbox';
import { licences, type LicencesTable } from './licences.js';

export interface RunningExample {
  url: string;
  inbox: Inbox;
  close(): Promise<void>;
}

export async function startExpressExample(env: Record<string, string | undefined>, spoolFile: string): Promise<RunningExample> {
  const config = loadConfig(env);
  // The team's domain only: its table and its transport, no course platform.
  const inbox = createInbox(config, { domains: [licences(spoolFile)] });
  await inbox.store.migrate();
  inbox.start();

  const app = express();
  // The raw bytes, whatever the content type: the signature is checked on them.
  app.post('/payments/webhooks/:provider', express.raw({ type: () => true, limit: config.bodyLimitBytes }), async (request, response) => {
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const answer = await answerDelivery(inbox, request.params.provider, { headers: request.headers, body });
    response.status(answer.status).set(answer.headers).json(answer.body);
  });
  // The application's own route, over its own table.
  app.get('/licences/:userId', async (request, response) => {
    const rows = await inbox.database.withTables<{ licences: LicencesTable }>().selectFrom('licences').selectAll().where('user_id', '=', request.params.userId).execute();
    response.json(rows);
  });

  const server = app.listen(config.port, config.host);
  await new Promise<void>((resolve, reject) => server.once('listening', resolve).once('error', reject));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    inbox,
    async close() {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await inbox.stop(config.shutdownTimeoutMs);
    },
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const example = await startExpressExample(process.env, process.env.SPOOL_FILE ?? 'welcome-emails.jsonl');
  console.log(`listening on ${example.url}; providers post to ${example.url}/payments/webhooks/<provider>`);
}
