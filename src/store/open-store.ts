import type { Clock } from '../clock.js';
import type { StoreBackend } from './backend.js';
import { KyselyInboxStore } from './inbox-store.js';
import { mysqlBackend } from './mysql/mysql-backend.js';
import { sqliteBackend } from './sqlite/sqlite-backend.js';
import type { InboxStore } from './store.js';

const BACKENDS: Record<string, StoreBackend> = { 'mysql:': mysqlBackend, 'sqlite:': sqliteBackend };

const POSTGRES_SCHEMES = new Set(['postgres:', 'postgresql:']);

export const DATABASE_URL_EXAMPLES = 'sqlite:./data/webhook-inbox.db or mysql://user:password@host:3306/database';

/** What is wrong with a DATABASE_URL, or null when a backend can open it. */
export function databaseUrlProblem(raw: string): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return `is not a valid URL (expected ${DATABASE_URL_EXAMPLES})`;
  }
  const backend = BACKENDS[url.protocol];
  if (POSTGRES_SCHEMES.has(url.protocol)) return `names a PostgreSQL database, which is not supported: use SQLite or MySQL/MariaDB (${DATABASE_URL_EXAMPLES})`;
  if (!backend) return `must start with sqlite: or mysql:// (got "${url.protocol}")`;
  return backend.validateUrl(url);
}

/**
 * Connections that record deliveries (DB_RECORD_CONNECTIONS), each running one group-commit batch at a
 * time: one batch fills while the other commits, and one held up (a lock wait) does not stop the
 * deliveries behind it. More connections split the same load into more, smaller statements, and on a
 * database nearby each statement costs the database and the service CPU: saturated, the acknowledgement
 * path did 1.39-1.41x the bench's baseline with two against 1.05-1.07x with ten. Across a slow link
 * more of them hide the round trip: with 2.5 ms each way, ten answered 1,000 deliveries/s with a p50
 * of 6.7 ms against 10.3 ms with two, and did 2.33x the baseline saturated against 1.86x
 * (bench/NOTES.md, sixteenth session).
 */
export const DEFAULT_RECORD_CONNECTIONS = 2;

/** Chooses the store backend once, from the DATABASE_URL scheme (validated by config.ts). */
export function openStore(url: string, options: { poolSize: number; recordConnections?: number; clock: Clock }): InboxStore {
  const problem = databaseUrlProblem(url);
  if (problem) throw new Error(`DATABASE_URL ${problem}`);
  const backend = BACKENDS[new URL(url).protocol]!;
  const recordBatches = Math.min(options.recordConnections ?? DEFAULT_RECORD_CONNECTIONS, backend.maxConcurrentBatches);
  const ackDb = backend.connect(url, { poolSize: recordBatches, preparedStatements: true });
  return new KyselyInboxStore(backend.connect(url, { poolSize: options.poolSize }), ackDb, recordBatches, backend, options.clock, url);
}
