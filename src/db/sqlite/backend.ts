import { existsSync, mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { CompiledQuery, Kysely, SqliteAdapter, SqliteDriver, SqliteIntrospector, SqliteQueryCompiler, sql, type DatabaseConnection, type Dialect, type Driver } from 'kysely';
import { sqliteFilePath } from '../../config/database-url.js';
import { describeError, StoreUnavailableError } from '../../errors.js';
import type { StoreBackend } from '../backend.js';
import type { ColumnTypes } from '../column-types.js';
import { recordPathOf } from '../recording/record-path.js';
import { returningBatch } from '../recording/returning.js';
import type { InboxDatabase } from '../schema.js';
import { cachingStatements } from './statement-cache.js';

/**
 * STRICT tables make SQLite refuse a value of the wrong type instead of storing it; TEXT compares
 * with the BINARY collation, so provider ids stay case-sensitive as in MySQL.
 */
const COLUMN_TYPES: ColumnTypes = {
  dialect: 'sqlite',
  id: sql`integer`,
  bigint: sql`integer`,
  timestamp: sql`text`,
  key: sql`text`,
  shortText: sql`text`,
  longText: sql`text`,
  tableOptions: sql`strict`,
};

/** How long a statement waits for another process's write lock before giving up (SQLITE_BUSY). */
const BUSY_TIMEOUT_MS = 5000;

/** The file cannot be used right now: locked past the busy timeout, unopenable, read-only or full. */
const UNAVAILABLE_CODES = /^SQLITE_(BUSY|LOCKED|CANTOPEN|IOERR|FULL|READONLY|PROTOCOL)/;
const CONFLICT_CODES = /^SQLITE_(BUSY|LOCKED)/;

function errorCode(error: unknown): string {
  const code = typeof error === 'object' && error !== null ? (error as { code?: unknown }).code : undefined;
  return typeof code === 'string' ? code : '';
}

/**
 * `mkdir -p` that fails where node's own (`recursive: true`) spins for ever, burning a core: below a
 * directory that exists but refuses children with ENOENT (/proc, a dangling symlink), that one steps
 * back to the parent, finds it there and tries the child again, without end. Here each missing
 * ancestor is made once, top down, and a refusal is final.
 */
function makeDirectories(path: string): void {
  const parent = dirname(path);
  if (parent !== path && !existsSync(parent)) makeDirectories(parent);
  try {
    mkdirSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
}

function openDatabase(path: string): Database.Database {
  let database: Database.Database;
  try {
    makeDirectories(dirname(path));
    database = new Database(path, { timeout: BUSY_TIMEOUT_MS });
  } catch (error) {
    // A missing permission or a file in the way: callers answer 503 and the next query tries again.
    throw new StoreUnavailableError(`cannot open SQLite database ${path}: ${describeError(error)}`, { cause: error });
  }
  // WAL lets readers run beside the writer; synchronous=FULL syncs the WAL on every commit, so an
  // acknowledged event survives power loss, not only a process crash.
  database.pragma('journal_mode = WAL');
  database.pragma('synchronous = FULL');
  database.pragma('foreign_keys = ON');
  return database;
}

/**
 * Transactions start with BEGIN IMMEDIATE: they take the write lock up front, waiting under the busy
 * timeout, instead of failing with SQLITE_BUSY when a read transaction tries to upgrade while another
 * process writes.
 */
class ImmediateTransactionDriver extends SqliteDriver {
  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

interface OpenFile {
  driver: ImmediateTransactionDriver;
  ready: Promise<void>;
  users: number;
}

/**
 * One connection per file per process. better-sqlite3 waits for a lock synchronously, so a second
 * connection in the same process would block the event loop while the first one, whose transaction
 * is waiting on that very loop, can never finish. Every store on the file shares the driver and its
 * mutex instead, so their transactions take turns.
 */
const openFiles = new Map<string, OpenFile>();

class SharedFileDriver implements Driver {
  private file: OpenFile | undefined;

  constructor(private readonly path: string) {}

  async init(): Promise<void> {
    let file = openFiles.get(this.path);
    if (!file) {
      const driver = new ImmediateTransactionDriver({ database: async () => cachingStatements(openDatabase(this.path)) });
      file = { driver, ready: driver.init(), users: 0 };
      openFiles.set(this.path, file);
    }
    file.users++;
    try {
      await file.ready;
    } catch (error) {
      // Not opened (missing permission, a directory in the way): the next query tries afresh.
      if (--file.users === 0) openFiles.delete(this.path);
      throw error;
    }
    this.file = file;
  }

  private get shared(): ImmediateTransactionDriver {
    if (!this.file) throw new Error('the SQLite store is closed');
    return this.file.driver;
  }

  acquireConnection(): Promise<DatabaseConnection> {
    return this.shared.acquireConnection();
  }

  beginTransaction(connection: DatabaseConnection): Promise<void> {
    return this.shared.beginTransaction(connection);
  }

  commitTransaction(connection: DatabaseConnection): Promise<void> {
    return this.shared.commitTransaction(connection);
  }

  rollbackTransaction(connection: DatabaseConnection): Promise<void> {
    return this.shared.rollbackTransaction(connection);
  }

  releaseConnection(): Promise<void> {
    return this.shared.releaseConnection();
  }

  async destroy(): Promise<void> {
    const file = this.file;
    this.file = undefined;
    if (!file || --file.users > 0) return;
    openFiles.delete(this.path);
    await file.driver.destroy();
  }
}

function sqliteFileDialect(path: string): Dialect {
  return {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new SharedFileDriver(path),
    createQueryCompiler: () => new SqliteQueryCompiler(),
    createIntrospector: (db) => new SqliteIntrospector(db),
  };
}

export const sqliteBackend: StoreBackend = {
  name: 'sqlite',
  columnTypes: COLUMN_TYPES,
  // One writer at a time: a second batch would only wait for the first.
  maxConcurrentBatches: 1,
  lockingReads: false,
  prepareEverywhere: false,

  connect(url) {
    const parsed = sqliteFilePath(new URL(url));
    if ('problem' in parsed) throw new Error(`DATABASE_URL ${parsed.problem}`);
    return new Kysely<InboxDatabase>({ dialect: sqliteFileDialect(resolve(parsed.path)) });
  },

  // The file and its directory are created when the first connection opens.
  async ensureDatabase() {},

  // INSERT ... RETURNING: better-sqlite3 12 bundles SQLite 3.4x; RETURNING came with 3.35.
  recordPath: (db) => recordPathOf(returningBatch(db)),

  async followInsertedIds() {},

  async startupWarnings() {
    return [];
  },

  isTransientConflict(error) {
    return CONFLICT_CODES.test(errorCode(error));
  },

  isUnavailable(error) {
    return UNAVAILABLE_CODES.test(errorCode(error));
  },
};
