import { Migrator, type Kysely, type Migration } from 'kysely';
import type { StoreBackend } from './backend.js';
import type { ColumnTypes } from './column-types.js';
import { inboxMigrations } from './migrations/index.js';
import type { InboxDatabase } from './schema.js';

/**
 * Migrations besides the inbox's own: those of the domains in use, named `<domain>/<migration>`. One
 * recorded under the name of a domain not in use was applied by an earlier run that used it: such a
 * record is kept, and nothing of it runs again.
 */
export interface DomainMigrations {
  /** The names of the domains in use. */
  domains: readonly string[];
  active(types: ColumnTypes): Record<string, Migration>;
}

export const NO_DOMAIN_MIGRATIONS: DomainMigrations = { domains: [], active: () => ({}) };

/**
 * The migrator over the inbox's migrations and those of its domains. They are listed before it runs:
 * it holds a connection while it asks for them, and SQLite's one connection would wait for itself if
 * the list needed a query then.
 */
async function migrator(db: Kysely<InboxDatabase>, backend: StoreBackend, domains: DomainMigrations): Promise<Migrator> {
  const migrations = await migrationsOf(db, backend, domains);
  return new Migrator({
    db,
    provider: { getMigrations: async () => migrations },
    migrationTableName: 'schema_migrations',
    migrationLockTableName: 'schema_migrations_lock',
    // Numbers are reserved per feature and land in any order (0004 and 0005 before 0003): a database
    // that already ran a later one must still take an earlier one that arrives afterwards.
    allowUnorderedMigrations: true,
  });
}

/**
 * A migration of a domain not in use (recorded as `<domain>/<name>`) that an earlier run applied stays
 * in the list as a record: the migrator refuses a database that ran migrations it does not know, and
 * a domain may be left out of a run and come back. One of a domain in use must still be known.
 */
async function migrationsOf(db: Kysely<InboxDatabase>, backend: StoreBackend, domains: DomainMigrations): Promise<Record<string, Migration>> {
  const types = backend.columnTypes;
  const migrations = { ...inboxMigrations(types), ...domains.active(types) };
  const inUse = new Set(domains.domains);
  const applied = await db
    .withTables<{ schema_migrations: { name: string } }>()
    .selectFrom('schema_migrations')
    .select('name')
    .where('name', 'like', '%/%')
    .execute()
    // No table yet: a new database, which ran nothing.
    .catch(() => []);
  for (const { name } of applied) {
    const domain = name.slice(0, name.indexOf('/'));
    if (!inUse.has(domain) && !(name in migrations)) migrations[name] = { up: () => Promise.reject(new Error(`${name} belongs to a domain not in use`)) };
  }
  return migrations;
}

/** Creates the database when missing and the server allows it, then applies pending migrations; returns the names applied now. */
export async function migrateToLatest(db: Kysely<InboxDatabase>, backend: StoreBackend, url: string, domains: DomainMigrations): Promise<string[]> {
  await backend.ensureDatabase(url);
  const { error, results } = await (await migrator(db, backend, domains)).migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(`migration failed: ${JSON.stringify(error)}`);
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Names of the migrations not applied yet. */
export async function pendingMigrations(db: Kysely<InboxDatabase>, backend: StoreBackend, domains: DomainMigrations): Promise<string[]> {
  return (await (await migrator(db, backend, domains)).getMigrations()).filter((m) => m.executedAt === undefined).map((m) => m.name);
}
