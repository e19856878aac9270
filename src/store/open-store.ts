import type { Clock } from '../clock.js';
import { DEFAULT_RECORD_CONNECTIONS } from '../config/load.js';
import { NO_DOMAIN_MIGRATIONS, type DomainMigrations } from '../db/migrate.js';
import { backendFor } from '../db/open-database.js';
import { KyselyInboxStore } from './kysely-store.js';

/**
 * Chooses the store backend once, from the DATABASE_URL scheme (validated by config/database-url.ts).
 * `migrations`: those of the domains in use, applied with the inbox's own. `idleTransactionTimeoutMs`:
 * see StoreBackend.connect; workers pass their lease time, past which a stalled worker's transaction
 * could not commit anyway, so that the payments it locked are freed then.
 */
export function openStore(
  url: string,
  options: {
    poolSize: number;
    recordConnections?: number;
    clock: Clock;
    migrations?: DomainMigrations;
    idleTransactionTimeoutMs?: number;
    /** How long a claim or a completion waits for others to share its transaction (see Batcher's `waitMs`); default 0. */
    processingBatchWaitMs?: number;
  },
): KyselyInboxStore {
  const backend = backendFor(url);
  const recordBatches = Math.min(options.recordConnections ?? DEFAULT_RECORD_CONNECTIONS, backend.maxConcurrentBatches);
  const { idleTransactionTimeoutMs } = options;
  const ackDb = backend.connect(url, { poolSize: recordBatches, preparedStatements: true, idleTransactionTimeoutMs });
  return new KyselyInboxStore({
    db: backend.connect(url, { poolSize: options.poolSize, preparedStatements: backend.prepareEverywhere, idleTransactionTimeoutMs }),
    ackDb,
    recordBatches,
    backend,
    clock: options.clock,
    url,
    domainMigrations: options.migrations ?? NO_DOMAIN_MIGRATIONS,
    processingBatchWaitMs: options.processingBatchWaitMs ?? 0,
  });
}
