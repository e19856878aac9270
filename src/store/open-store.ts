import type { Clock } from '../clock.js';
import type { StoreBackend } from './backend.js';
import { KyselyInboxStore } from './inbox-store.js';
import { mysqlBackend } from './mysql/mysql-backend.js';
import type { InboxStore } from './store.js';

const BACKENDS: Record<string, StoreBackend> = { 'mysql:': mysqlBackend };

/** Chooses the store backend once, from the DATABASE_URL scheme (validated by config.ts). */
export function openStore(url: string, options: { poolSize: number; clock: Clock }): InboxStore {
  const backend = BACKENDS[new URL(url).protocol];
  if (!backend) throw new Error(`no store backend for DATABASE_URL scheme "${new URL(url).protocol}"`);
  return new KyselyInboxStore(backend.connect(url, { poolSize: options.poolSize }), backend, options.clock, url);
}
