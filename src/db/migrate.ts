import { Migrator, type Kysely } from 'kysely';
import type { StoreBackend } from './backend.js';
import { inboxMigrations } from './migrations.js';
import type { InboxDatabase } from './schema.js';

function migrator(db: Kysely<InboxDatabase>, backend: StoreBackend): Migrator {
  return new Migrator({
    db,
    provider: { getMigrations: async () => inboxMigrations(backend.columnTypes) },
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
    // Numbers are reserved per feature and land in any order (0004 and 0005 before 0003): a database
    // that already ran a later one must still take an earlier one that arrives afterwards.
    allowUnorderedMigrations: true,
  });
}

/** Creates the database when missing and the server allows it, then applies pending migrations; returns the names applied now. */
export async function migrateToLatest(db: Kysely<InboxDatabase>, backend: StoreBackend, url: string): Promise<string[]> {
  await backend.ensureDatabase(url);
  const { error, results } = await migrator(db, backend).migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(`migration failed: ${JSON.stringify(error)}`);
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Names of the migrations not applied yet. */
export async function pendingMigrations(db: Kysely<InboxDatabase>, backend: StoreBackend): Promise<string[]> {
  return (await migrator(db, backend).getMigrations()).filter((m) => m.executedAt === undefined).map((m) => m.name);
}
