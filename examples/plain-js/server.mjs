/**
 * webhook-inbox in plain JavaScript, with no build step: the whole service (createApp) with the
 * team's own domain and one route of its own. Run it with `node plain-js/server.mjs` (the
 * environment configures the inbox: STRIPE_WEBHOOK_SECRET, DATABASE_URL, ...; DOOR_ACCESS_URL the
 * door-access service).
 */
import { pathToFileURL } from 'node:url';
import { createApp, loadConfig } from 'webhook-inbox';
import { memberships } from './memberships.mjs';

/**
 * @param {Record<string, string | undefined>} env
 * @param {string} doorAccessUrl
 */
export async function startPlainJsExample(env, doorAccessUrl) {
  const config = loadConfig(env);
  // Migrated, workers and scheduled jobs running; the webhook routes are /webhooks/<provider>.
  const { app, inbox } = await createApp(config, { domains: [memberships(doorAccessUrl)] });
  // The application's own route, over its own table.
  app.get('/memberships/:userId', async (request) => {
    return inbox.database.selectFrom('memberships').select(['payment_key', 'plan', 'status']).where('user_id', '=', request.params.userId).execute();
  });
  const url = await app.listen({ host: config.host, port: config.port });
  // Closing the server stops the inbox.
  return { url, inbox, close: () => app.close() };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const example = await startPlainJsExample(process.env, process.env.DOOR_ACCESS_URL ?? 'http://127.0.0.1:9000/access');
  console.log(`listening on ${example.url}; providers post to ${example.url}/webhooks/<provider>`);
}
