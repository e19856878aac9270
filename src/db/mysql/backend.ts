import { Kysely, MysqlDialect, sql } from 'kysely';
import { createConnection, createPool } from 'mysql2';
import { serverDatabaseName } from '../../config/database-url.js';
import { MAX_KEY_LENGTH } from '../../model/delivery.js';
import type { StoreBackend } from '../backend.js';
import type { ColumnTypes } from '../column-types.js';
import type { InboxDatabase } from '../schema.js';
import { preparingPool } from './prepared-pool.js';
import { mysqlRecordPath } from './record-path.js';

const COLUMN_TYPES: ColumnTypes = {
  dialect: 'mysql',
  id: sql`bigint unsigned`,
  bigint: sql`bigint`,
  timestamp: sql`datetime(3)`,
  key: sql.raw(`varchar(${MAX_KEY_LENGTH})`),
  shortText: sql`varchar(64)`,
  // LONGTEXT, not JSON: MySQL 8 re-serialises JSON columns, and the payload must stay byte-exact.
  longText: sql`longtext`,
  // Binary collation: provider ids are case-sensitive ("evt_A" and "evt_a" are different events).
  tableOptions: sql`engine=InnoDB default charset=utf8mb4 collate=utf8mb4_bin`,
};

const UNAVAILABLE_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EPIPE',
  'PROTOCOL_CONNECTION_LOST',
  'PROTOCOL_SEQUENCE_TIMEOUT',
  'ER_CON_COUNT_ERROR',
  'ER_SERVER_SHUTDOWN',
  'ER_CONNECTION_KILLED',
  'ER_QUERY_INTERRUPTED',
]);
const ER_LOCK_WAIT_TIMEOUT = 1205;
const ER_LOCK_DEADLOCK = 1213;
/**
 * The server refuses this service's account or its database: unavailable like a server that is down
 * (503, the provider retries; not ready), until the credentials or grants are fixed.
 */
const REFUSED_ERRNOS = new Set([
  1044, // ER_DBACCESS_DENIED_ERROR
  1045, // ER_ACCESS_DENIED_ERROR
  1049, // ER_BAD_DB_ERROR
  1698, // ER_ACCESS_DENIED_NO_PASSWORD_ERROR
]);

function driverError(error: unknown): { code?: string; errno?: number; fatal?: boolean } {
  return typeof error === 'object' && error !== null ? error : {};
}

export const mysqlBackend: StoreBackend = {
  name: 'mysql',
  columnTypes: COLUMN_TYPES,
  // Row locks let batches commit side by side; InnoDB then shares one log flush between them.
  maxConcurrentBatches: Number.POSITIVE_INFINITY,
  lockingReads: true,
  // Processing ran no cheaper prepared on MariaDB, and mysql2 prepares a statement at first sight.
  prepareEverywhere: false,

  connect(url, { poolSize, preparedStatements = false, idleTransactionTimeoutMs }) {
    const pool = createPool({
      uri: url,
      connectionLimit: poolSize,
      // Times travel as UTC strings in both directions (see schema.ts).
      dateStrings: true,
      timezone: 'Z',
      charset: 'utf8mb4',
      supportBigNumbers: true,
      enableKeepAlive: true,
      connectTimeout: 5000,
      // The acknowledgement path's statements come in a few shapes (one per record batch size, see
      // recordBatchShape), so the shapes in use stay prepared; the default two connections hold at
      // most 128 of the server's 16,382 by default.
      ...(preparedStatements ? { maxPreparedStatements: 64 } : {}),
    });
    // READ COMMITTED: a batch of events in one transaction must see rows committed after its first
    // read (under REPEATABLE READ an INSERT IGNORE can meet a row its snapshot does not show), and it
    // takes no gap locks. Correctness rests on unique keys and conditional updates, which read the
    // latest committed row under either level.
    pool.on('connection', (connection) => {
      connection.query('SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED');
      if (idleTransactionTimeoutMs !== undefined) {
        // MariaDB's (10.3+), in whole seconds. MySQL has no such setting and refuses it: there a
        // stalled transaction keeps its locks until its process wakes or its connection ends.
        connection.query(`SET SESSION idle_transaction_timeout = ${Math.max(1, Math.ceil(idleTransactionTimeoutMs / 1000))}`, () => {});
      }
    });
    return new Kysely<InboxDatabase>({ dialect: new MysqlDialect({ pool: preparedStatements ? preparingPool(pool) : pool }) });
  },

  async ensureDatabase(url) {
    const target = new URL(url);
    const name = serverDatabaseName(url);
    target.pathname = '/';
    const connection = createConnection({ uri: target.toString(), connectTimeout: 5000 }).promise();
    try {
      const [rows] = await connection.query('SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?', [name]);
      if ((rows as unknown[]).length === 0) {
        await connection.query(`CREATE DATABASE IF NOT EXISTS \`${name.replaceAll('`', '``')}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`);
      }
    } catch (error) {
      // Not end(): after a refused login mysql2 never settles it, and a process waiting on nothing
      // else would end with exit code 0 and the error unsaid.
      connection.destroy();
      throw error;
    }
    await connection.end();
  },

  recordPath: mysqlRecordPath,

  async followInsertedIds() {},

  async startupWarnings() {
    return [];
  },

  isTransientConflict(error) {
    const { errno } = driverError(error);
    return errno === ER_LOCK_DEADLOCK || errno === ER_LOCK_WAIT_TIMEOUT;
  },

  isUnavailable(error) {
    const { code, errno, fatal } = driverError(error);
    return (code !== undefined && UNAVAILABLE_CODES.has(code)) || (errno !== undefined && REFUSED_ERRNOS.has(errno)) || fatal === true;
  },
};
