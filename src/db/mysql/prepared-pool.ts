import type { MysqlPool, MysqlPoolConnection, MysqlQueryResult } from 'kysely';
import type { Pool, PoolConnection } from 'mysql2';

/** The server holds too many prepared statements (max_prepared_stmt_count), or cannot prepare this one. */
const ER_MAX_PREPARED_STMT_COUNT_REACHED = 1461;
const ER_UNSUPPORTED_PS = 1295;
const CANNOT_PREPARE = new Set([ER_MAX_PREPARED_STMT_COUNT_REACHED, ER_UNSUPPORTED_PS]);

/**
 * mysql2 keeps a definition object for every parameter of every statement it holds prepared, so
 * holding many large statements prepared costs memory. Record batches come in a few sizes
 * (recordBatchShape) of at most MAX_RECORD_BATCH events: this bound must prepare all of them (a unit
 * test ties the two), and keeps statements of any other kind that large as text.
 */
export const MAX_PREPARED_PARAMETERS = 1280;

type Callback = (error: unknown, result: MysqlQueryResult) => void;

/**
 * A pool for kysely whose statements with parameters run as server-side prepared statements
 * (mysql2's `execute`, cached per connection), not as text with the values escaped into it. For
 * statements that carry payloads, the client's escaping and the server's parsing of those literals
 * would be a large part of an acknowledgement's CPU. A statement
 * the server will not prepare (its limit reached, or a kind it cannot prepare) runs as text.
 *
 * Meant for statements of a few shapes: every distinct SQL text is one more prepared statement on
 * each connection, up to the pool's `maxPreparedStatements`, and only statements of at most
 * MAX_PREPARED_PARAMETERS values are prepared.
 */
export function preparingPool(pool: Pool): MysqlPool {
  // kysely keeps per-connection state keyed by the object it is given, so each raw connection keeps one wrapper.
  const wrappers = new WeakMap<PoolConnection, MysqlPoolConnection>();
  return {
    getConnection(callback) {
      pool.getConnection((error, connection) => {
        if (error) return callback(error, undefined as never);
        let wrapper = wrappers.get(connection);
        if (!wrapper) {
          wrapper = preparing(connection);
          wrappers.set(connection, wrapper);
        }
        callback(null, wrapper);
      });
    },
    end: (callback) => pool.end(callback),
  };
}

function preparing(connection: PoolConnection): MysqlPoolConnection {
  const asText = (sql: string, parameters: unknown[], callback: Callback) => connection.query(sql, parameters, callback as never);
  function query(sql: string, parameters: unknown[]): ReturnType<PoolConnection['query']>;
  function query(sql: string, parameters: unknown[], callback: Callback): void;
  function query(sql: string, parameters: unknown[], callback?: Callback) {
    // Streams and statements without values gain nothing from preparing.
    if (!callback) return connection.query(sql, parameters);
    if (parameters.length === 0 || parameters.length > MAX_PREPARED_PARAMETERS) return asText(sql, parameters, callback);
    try {
      connection.execute(
        sql,
        parameters as never,
        ((error: { errno?: number } | null, result: MysqlQueryResult) => {
          if (error?.errno !== undefined && CANNOT_PREPARE.has(error.errno)) asText(sql, parameters, callback);
          else callback(error, result);
        }) as never,
      );
    } catch (error) {
      // mysql2 refuses some values (undefined) by throwing instead of calling back.
      callback(error, undefined as never);
    }
  }
  return { query, release: () => connection.release() };
}
