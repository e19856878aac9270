import type { Kysely } from 'kysely';
import type { ColumnTypes } from './column-types.js';
import type { RecordPath } from './recording/record-path.js';
import type { InboxDatabase } from './schema.js';

/**
 * What differs between SQL databases, and nothing else: connecting, column types, how new events are
 * written (each database's folder holds its own way), and reading the driver's errors. The store's
 * logic is written once, over Kysely, in store/.
 */
export interface StoreBackend {
  readonly name: string;
  readonly columnTypes: ColumnTypes;
  /** Group-commit batches that may commit at the same time (one for a single-writer database). */
  readonly maxConcurrentBatches: number;
  /**
   * Whether a transaction locks the rows it reads with SELECT ... FOR UPDATE until it ends. False for
   * a database whose write transactions run one at a time (SQLite): they never meet.
   */
  readonly lockingReads: boolean;
  /**
   * Whether the store's general pool (processing, the outbox, operators' reads) runs its statements
   * prepared too, not only the acknowledgement path's. True where the server's parsing and planning
   * are a large part of processing's cost (PostgreSQL); bench/HISTORY.md has the measurement.
   */
  readonly prepareEverywhere: boolean;
  /**
   * `preparedStatements`: statements with values run prepared on the server, where the backend can
   * (the acknowledgement path's pool, and every pool where `prepareEverywhere`; see the backends'
   * prepared-pool.ts).
   * `idleTransactionTimeoutMs`: the server drops the connection of a transaction idle this long (its
   * process stalled), which rolls it back and frees its locks, where the server can (MariaDB,
   * PostgreSQL); unset, it waits for the process.
   */
  connect(url: string, options: { poolSize: number; preparedStatements?: boolean; idleTransactionTimeoutMs?: number }): Kysely<InboxDatabase>;
  /** Creates the database itself when the server allows it and it is missing. */
  ensureDatabase(url: string): Promise<void>;
  /**
   * How this database records new events (see RecordPath), on `db`, the acknowledgement path's
   * connections; its statements are compiled once, here.
   */
  recordPath(db: Kysely<InboxDatabase>): RecordPath;
  /**
   * After rows were inserted with ids of their own (a copy, a fixture): the next id generated for
   * `table` must come after them. MySQL and SQLite follow the largest id by themselves; a PostgreSQL
   * identity is a sequence, set here.
   */
  followInsertedIds(db: Kysely<InboxDatabase>, table: string): Promise<void>;
  /** What an operator should know about the server's settings at start (settings that risk acknowledged events). */
  startupWarnings(db: Kysely<InboxDatabase>): Promise<string[]>;
  /** Deadlocks and lock timeouts: the transaction can simply run again. */
  isTransientConflict(error: unknown): boolean;
  /** The database cannot be reached right now: callers answer 503 and retry later. */
  isUnavailable(error: unknown): boolean;
}
