import type { Kysely } from 'kysely';
import type { InboxDatabase } from '../../db/schema.js';
import { OperationError } from '../errors.js';

/**
 * Tables that describe a database, or the processes running on it, rather than the installation:
 * never copied (a lock or a claimed tick of the source's processes means nothing to the target's; a
 * dashboard user signs in again on the target).
 */
const BOOKKEEPING = new Set([
  'schema_migrations',
  'schema_migrations_lock',
  'copy_progress',
  'operation_locks',
  'scheduled_runs',
  'firing_alerts',
  'admin_sessions',
  'admin_sign_in_failures',
]);
/**
 * The order tables are copied in: events first, then what refers to them by row id. No table has a
 * foreign key (the store keeps references by id, checked by its own code), so the order only makes a
 * copy cut short hold whole events before what points at them; other tables follow by name.
 */
const FIRST = ['webhook_events', 'webhook_event_bodies', 'archived_event_keys', 'payments', 'payment_leases', 'event_replays', 'event_attempts', 'outbox'];

/** Tables keyed by another table's row id rather than an id of their own: their key column. */
const ROW_KEYS: Readonly<Record<string, string>> = { webhook_event_bodies: 'event_row_id' };

export interface TablePlan {
  name: string;
  /** The column rows are copied and compared in order of: `id`, or the key of a table in ROW_KEYS. */
  key: string;
  /** Whether the table's key is an id the database hands out (the target's sequence follows the copied ids). */
  ownIds: boolean;
  /** The source's columns, in name order: copied, and checksummed, as they are. */
  columns: string[];
}

/**
 * What `copy` will copy: every table of the source that the migrations made, in dependency order.
 * The target (migrated first) must have each of them with each of their columns; the source must not
 * have run a migration the target does not know.
 */
export async function planCopy(source: Kysely<InboxDatabase>, target: Kysely<InboxDatabase>): Promise<TablePlan[]> {
  const [sourceApplied, targetApplied] = await Promise.all([appliedMigrations(source), appliedMigrations(target)]);
  const unknown = sourceApplied.filter((name) => !targetApplied.includes(name));
  if (unknown.length > 0) {
    throw new OperationError(
      `the source ran migrations the target does not have: ${unknown.join(', ')} (copy with the same version and domains as the source's service)`,
      'bad_argument',
    );
  }
  const targetTables = new Map((await target.introspection.getTables()).map((table) => [table.name, new Set(table.columns.map((c) => c.name))]));
  const plans: TablePlan[] = [];
  for (const table of await source.introspection.getTables()) {
    if (BOOKKEEPING.has(table.name)) continue;
    const columns = table.columns.map((c) => c.name).sort();
    const key = ROW_KEYS[table.name] ?? 'id';
    if (!columns.includes(key)) throw new OperationError(`source table ${table.name} has no ${key} column: not a table of webhook-inbox`, 'bad_argument');
    const targetColumns = targetTables.get(table.name);
    const missing = columns.filter((column) => !targetColumns?.has(column));
    if (missing.length > 0) throw new OperationError(`the target's table ${table.name} lacks ${missing.join(', ')}`, 'bad_argument');
    plans.push({ name: table.name, key, ownIds: key === 'id', columns });
  }
  const rank = (name: string) => (FIRST.includes(name) ? FIRST.indexOf(name) : FIRST.length);
  return plans.sort((a, b) => rank(a.name) - rank(b.name) || (a.name < b.name ? -1 : 1));
}

async function appliedMigrations(db: Kysely<InboxDatabase>): Promise<string[]> {
  const rows = await db
    .withTables<{ schema_migrations: { name: string } }>()
    .selectFrom('schema_migrations')
    .select('name')
    .execute()
    .catch(() => {
      throw new OperationError('the source has no schema_migrations table: not a webhook-inbox database', 'bad_argument');
    });
  return rows.map((row) => row.name);
}
