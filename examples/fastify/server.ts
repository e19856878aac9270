/**
 * webhook-inbox inside a fastify application: the inbox's routes mounted under /payments beside
 * the application's own. Run it with `node dist/fastify/server.js` after `npx tsc -p examples` (the
 * environment configures the inbox: STRIPE_WEBHOOK_SECRET, DATABASE_URL, ...; CRM_URL the CRM).
 */
import { pathToFileURL } from 'node:url';
import Fastify from 'fastify';
import { createInbox, installErrorHandling, loadConfig, opsRoutes, webhookRoutes, type Inbox } from 'webhook-inbox';
import { credits, type CreditLedgerTable } from './credits.js';

export interface RunningExample {
  url: string;
  inbox: Inbox;
  close(): Promise<void>;
}

export async function startFastifyExample(env: Record<string, string | undefined>, crmUrl: string): Promise<RunningExample> {
  const config = loadConfig(env);
  const inbox = createInbox(config, { domains: [credits(crmUrl)] });
  await inbox.store.migrate();
  inbox.start();

  const app = Fastify();
  // The status codes of the inbox's answers (401 for a bad signature, 503 while the database is away, ...).
  installErrorHandling(app);
  await app.register(webhookRoutes, { prefix: '/payments', inbox, bodyLimitBytes: config.bodyLimitBytes });
  await app.register(opsRoutes, { inbox });
  // The application's own route, over its own table.
  app.get<{ Params: { userId: string } }>('/credits/:userId', async (request) => {
    const db = inbox.database.withTables<{ credit_ledger: CreditLedgerTable }>();
    return db.selectFrom('credit_ledger').select(['payment_key', 'amount', 'currency']).where('user_id', '=', request.params.userId).execute();
  });
  app.addHook('onClose', () => inbox.stop(config.shutdownTimeoutMs));

  const url = await app.listen({ host: config.host, port: config.port });
  return { url, inbox, close: () => app.close() };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const example = await startFastifyExample(process.env, process.env.CRM_URL ?? 'http://127.0.0.1:9000/top-ups');
  console.log(`listening on ${example.url}; providers post to ${example.url}/payments/webhooks/<provider>`);
}
