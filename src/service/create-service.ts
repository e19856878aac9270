import { createManagementServer, openInbox, receivingServiceParts, type InboxOptions } from '../app.js';
import type { Config } from '../config/settings.js';
import type { InboxDatabase } from '../db/schema.js';
import { ProcessingThread } from './processing-thread.js';
import { Service } from './service.js';

/**
 * What a service runs, as the CLI's commands do:
 * - `serve`: the webhook listener, the management listener when MANAGEMENT_PORT is set, the
 *   dashboard, the scheduled jobs and the workers;
 * - `serve-with-thread`: the same, the workers in a thread of their own (WORKER_THREAD). The thread
 *   runs the inbox `config` describes: the options' domains, handlers and applier do not reach it;
 * - `receive`: `serve` without workers (`serve --no-workers`): other processes process the events;
 * - `work`: the workers alone, with the management listener when MANAGEMENT_PORT is set
 *   (`webhook-inbox worker`).
 */
export type ServiceRole = 'serve' | 'serve-with-thread' | 'receive' | 'work';

export interface ServiceOptions<DB extends InboxDatabase = InboxDatabase> extends InboxOptions<DB> {
  /** `serve` by default. */
  role?: ServiceRole;
}

/**
 * The service `config` describes, in `options.role`: its inbox opened (and migrated unless
 * MIGRATE_ON_START=false), its parts built; start() starts them, listen() opens the listeners and
 * stop() stops everything in one order (see Service.stop).
 */
export async function createService<DB extends InboxDatabase = InboxDatabase>(config: Config, options: ServiceOptions<DB> = {}): Promise<Service> {
  const { role = 'serve', ...inboxOptions } = options;
  if (role === 'work') {
    const inbox = await openInbox(config, inboxOptions);
    // Probes and its own processing metrics (counted in this process only), where MANAGEMENT_PORT asks.
    const management = config.management ? await createManagementServer(config, inbox) : null;
    return new Service({ config, inbox, webhooks: null, management, processing: 'inbox', schedule: null, bulkReplays: null, statistics: null });
  }
  const thread = role === 'serve-with-thread' ? new ProcessingThread(config) : null;
  // The thread's announcements cross a message port, unless REDIS_URL carries them.
  const inbox = await openInbox(config, thread?.publisher ? { ...inboxOptions, queue: thread.publisher } : inboxOptions);
  return new Service(await receivingServiceParts(config, inbox, thread ?? (role === 'receive' ? null : 'inbox')));
}
