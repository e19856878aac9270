import { Migrator, type Kysely, type MigrationResult } from 'kysely';
import { inboxMigrations } from '../../src/db/migrations/index.js';
import { mysqlBackend } from '../../src/db/mysql/backend.js';
import { postgresBackend } from '../../src/db/postgres/backend.js';
import { sqliteBackend } from '../../src/db/sqlite/backend.js';
import type { KyselyInboxStore } from '../../src/store/kysely-store.js';
import type { StoreBackendName } from './database.js';

/**
 * A database as an older version of webhook-inbox left it, for the tests of migrations that move
 * data: the store's own migrations applied up to a named one, and its tables open to rows of any
 * shape (the schema types describe the latest version).
 */
export const BACKENDS = { mysql: mysqlBackend, postgres: postgresBackend, sqlite: sqliteBackend };

export const looseDb = (store: KyselyInboxStore) => store.db as unknown as Kysely<Record<string, Record<string, unknown>>>;

/** Applies the inbox's migrations up to and including `name`; returns those it applied. */
export async function migrateTo(store: KyselyInboxStore, backend: StoreBackendName, name: string): Promise<MigrationResult[]> {
  const migrator = new Migrator({
    db: store.db,
    provider: { getMigrations: async () => inboxMigrations(BACKENDS[backend].columnTypes) },
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
  });
  const { error, results } = await migrator.migrateTo(name);
  if (error) throw error instanceof Error ? error : new Error(JSON.stringify(error));
  return results ?? [];
}
