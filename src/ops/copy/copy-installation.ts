import { createHash } from 'node:crypto';
import type { Generated, Kysely } from 'kysely';
import type { StoreBackend } from '../../db/backend.js';
import { toDbTime, type InboxDatabase } from '../../db/schema.js';
import { maskUrl } from '../../config/display.js';
import { OperationError } from '../errors.js';
import { TableChecksum } from './checksum.js';
import { planCopy, type TablePlan } from './plan.js';

/** Rows per batch unless told: a batch is one read from the source and one transaction in the target. */
export const DEFAULT_COPY_BATCH = 500;
/** Above this a batch of the widest table would pass SQLite's limit of 32,766 parameters per statement. */
export const MAX_COPY_BATCH = 1000;

export interface CopyEnd {
  db: Kysely<InboxDatabase>;
  backend: StoreBackend;
  url: string;
}

export interface CopyOptions {
  /** Write into a target that already holds events: rows whose id or unique key it has are left as they are. */
  merge: boolean;
  batchSize: number;
  /** Told after every batch: the table, the rows copied of it so far (in this and earlier runs), and its rows in the source. */
  onProgress?: (table: string, copied: number, total: number) => void;
}

export interface TableReport {
  table: string;
  /** Rows in the source, and in the target after the copy. */
  sourceRows: number;
  targetRows: number;
  /** Rows written by this run (a resumed copy writes only those not copied before). */
  copiedNow: number;
  /** SHA-256 over the source's rows, and over the target's rows of the same ids (see TableChecksum). */
  sourceChecksum: string;
  targetChecksum: string;
  verified: boolean;
}

export interface CopyReport {
  /** A copy of this source into this target had begun before: it went on from where it stopped. */
  resumed: boolean;
  tables: TableReport[];
  verified: boolean;
}

interface ProgressRow {
  id: Generated<number>;
  source: string;
  table_name: string;
  last_id: number;
  copied: number;
  updated_at: string;
}

type ProgressDb = Kysely<{ copy_progress: ProgressRow }>;
/** The tables as plain rows: a copy moves whatever columns the source has. */
type AnyDb = Kysely<Record<string, Record<string, unknown>>>;

/** The source as the target's copy_progress knows it: a hash of its URL without the password (64 characters). */
function sourceKey(url: string): string {
  return createHash('sha256').update(maskUrl(url)).digest('hex');
}

/**
 * Copies an installation between two stores (any two of SQLite, MySQL/MariaDB, PostgreSQL): every
 * table the migrations made, in batches by id, each batch committed in the target with the table's
 * cursor (copy_progress), so that a copy cut short resumes where it stopped. The ids are kept, so
 * every reference by row id stays true. Ends by verifying each table: its row count and a checksum of
 * its rows in the source and in the target. The target must be migrated already.
 *
 * Refuses a target that holds events, unless this copy began there before (it resumes) or `merge`.
 */
export async function copyInstallation(from: CopyEnd, to: CopyEnd, options: CopyOptions): Promise<CopyReport> {
  const source = sourceKey(from.url);
  const progress = to.db.withTables<{ copy_progress: ProgressRow }>();
  const begun = await progress.selectFrom('copy_progress').select(['table_name', 'last_id', 'copied']).where('source', '=', source).execute();
  const targetEvents = await countRows(to.db as unknown as AnyDb, 'webhook_events');
  if (targetEvents > 0 && begun.length === 0 && !options.merge) {
    throw new OperationError(`the target already holds ${targetEvents} events: copy into an empty database, or pass --merge to add to them`, 'target_not_empty');
  }
  const plans = await planCopy(from.db, to.db);
  const cursors = new Map(begun.map((row) => [row.table_name, { lastId: Number(row.last_id), copied: Number(row.copied) }]));
  const tables: TableReport[] = [];
  for (const plan of plans) {
    const copiedNow = await copyTable(from, to, plan, source, cursors.get(plan.name) ?? { lastId: 0, copied: 0 }, options);
    tables.push({ ...(await verifyTable(from.db as unknown as AnyDb, to.db as unknown as AnyDb, plan, options)), copiedNow });
  }
  return { resumed: begun.length > 0, tables, verified: tables.every((t) => t.verified) };
}

async function countRows(db: AnyDb, table: string): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

/** The table's next rows after `lastId`, in key order. */
function batchAfter(db: AnyDb, plan: TablePlan, lastId: number, size: number): Promise<Array<Record<string, unknown>>> {
  return db.selectFrom(plan.name).select(plan.columns).where(plan.key, '>', lastId).orderBy(plan.key).limit(size).execute();
}

/** Copies the rows after the cursor, a batch per target transaction with the cursor; returns the rows written. */
async function copyTable(from: CopyEnd, to: CopyEnd, plan: TablePlan, source: string, cursor: { lastId: number; copied: number }, options: CopyOptions): Promise<number> {
  const sourceDb = from.db as unknown as AnyDb;
  const total = await countRows(sourceDb, plan.name);
  await to.db
    .withTables<{ copy_progress: ProgressRow }>()
    .insertInto('copy_progress')
    .orIgnore()
    .values({ source, table_name: plan.name, last_id: 0, copied: 0, updated_at: toDbTime(new Date()) })
    .execute();
  let { lastId, copied } = cursor;
  let copiedNow = 0;
  options.onProgress?.(plan.name, copied, total);
  for (;;) {
    const rows = await batchAfter(sourceDb, plan, lastId, options.batchSize);
    if (rows.length === 0) break;
    lastId = Number(rows.at(-1)![plan.key]);
    await (to.db as unknown as AnyDb).transaction().execute(async (tx) => {
      // Ignored: a row the target has already (merge), by id or by a unique key.
      const inserted = await tx.insertInto(plan.name).orIgnore().values(rows).executeTakeFirst();
      copiedNow += Number(inserted.numInsertedOrUpdatedRows ?? 0);
      await (tx as unknown as ProgressDb)
        .updateTable('copy_progress')
        .set({ last_id: lastId, copied: copied + rows.length, updated_at: toDbTime(new Date()) })
        .where('source', '=', source)
        .where('table_name', '=', plan.name)
        .execute();
    });
    copied += rows.length;
    options.onProgress?.(plan.name, copied, total);
  }
  if (plan.ownIds) await to.backend.followInsertedIds(to.db, plan.name);
  return copiedNow;
}

/**
 * Both sides' checksums over the source's ids, read in the same batches; the counts besides. Without
 * merge the target must hold exactly the source's rows; with merge, at least them.
 */
async function verifyTable(sourceDb: AnyDb, targetDb: AnyDb, plan: TablePlan, options: CopyOptions): Promise<Omit<TableReport, 'copiedNow'>> {
  const sourceSum = new TableChecksum(plan.columns);
  const targetSum = new TableChecksum(plan.columns);
  for (let lastId = 0; ;) {
    const rows = await batchAfter(sourceDb, plan, lastId, options.batchSize);
    if (rows.length === 0) break;
    const ids = rows.map((row) => Number(row[plan.key]));
    lastId = ids.at(-1)!;
    for (const row of rows) sourceSum.add(row);
    const copies = await targetDb.selectFrom(plan.name).select(plan.columns).where(plan.key, 'in', ids).orderBy(plan.key).execute();
    for (const row of copies) targetSum.add(row);
  }
  const targetRows = await countRows(targetDb, plan.name);
  const sourceChecksum = sourceSum.digest();
  const targetChecksum = targetSum.digest();
  const countsAgree = options.merge ? targetRows >= sourceSum.rows : targetRows === sourceSum.rows;
  return { table: plan.name, sourceRows: sourceSum.rows, targetRows, sourceChecksum, targetChecksum, verified: countsAgree && sourceChecksum === targetChecksum };
}
