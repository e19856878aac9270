import { createPool } from 'mysql2/promise';
import pg from 'pg';
import { toDbTime } from '../src/db/schema.js';
import type { VerifiedEvent } from '../src/model/delivery.js';

/**
 * One statement of the hand-written servers (the baseline and the naive handler), written for each
 * server: MariaDB's `?` placeholders and INSERT IGNORE, PostgreSQL's `$n` and ON CONFLICT DO NOTHING.
 * `name` names the PostgreSQL prepared statement: unique per text.
 */
export interface PeerStatement {
  name: string;
  mysql: string;
  postgres: string;
}

export type PeerValue = string | number | null;

/**
 * The hand-written servers keep an event's payload and headers in its row, as a handler written by
 * hand would: each adds the two columns to its own database's webhook_events, which the service
 * keeps in webhook_event_bodies instead (migration 0024).
 */
export const INLINE_BODY_COLUMNS: Omit<PeerStatement, 'name'> = {
  mysql: 'ALTER TABLE webhook_events ADD COLUMN IF NOT EXISTS payload LONGTEXT, ADD COLUMN IF NOT EXISTS headers LONGTEXT',
  postgres: 'ALTER TABLE webhook_events ADD COLUMN IF NOT EXISTS payload text, ADD COLUMN IF NOT EXISTS headers text',
};

const BASELINE_COLUMNS = `webhook_events
  (provider, event_id, event_type, payload, headers, status, attempts, next_attempt_at, created_at)`;

/** The baseline's one statement per delivery: the verified event, its body inline, as received. */
export const BASELINE_INSERT: PeerStatement = {
  name: 'baseline_insert',
  mysql: `INSERT IGNORE INTO ${BASELINE_COLUMNS} VALUES (?, ?, ?, ?, ?, 'received', 0, ?, ?)`,
  postgres: `INSERT INTO ${BASELINE_COLUMNS} VALUES ($1, $2, $3, $4, $5, 'received', 0, $6, $7) ON CONFLICT DO NOTHING`,
};

export function baselineInsertValues(event: VerifiedEvent, receivedAt: Date): PeerValue[] {
  const at = toDbTime(receivedAt);
  return [event.provider, event.eventId, event.eventType, event.payload, JSON.stringify(event.headers), at, at];
}

/** What the hand-written servers need of a database: autocommit statements on a pool, nothing more. */
export interface PeerDatabase {
  /** Runs a statement prepared (mysql2's execute, a named pg statement), in autocommit. */
  execute(statement: PeerStatement, values: PeerValue[]): Promise<void>;
  /** Runs statements without values, unprepared (the naive handler's table). */
  query(statement: Omit<PeerStatement, 'name'>): Promise<void>;
  end(): Promise<void>;
}

/**
 * A pool of DB_POOL_SIZE connections (the service's default, 10) on the database `url` names: a
 * PostgreSQL one for postgres:// and postgresql:// URLs, a MariaDB/MySQL one otherwise. Both prepare
 * their statements on each connection, as the service does on its acknowledgement path.
 */
export function openPeerDatabase(url: string): PeerDatabase {
  const poolSize = Number(process.env.DB_POOL_SIZE ?? 10);
  if (/^postgres(ql)?:/.test(url)) {
    const pool = new pg.Pool({ connectionString: url, max: poolSize });
    // A connection the server dropped while idle: the pool discards it; the next statement reconnects.
    pool.on('error', () => {});
    return {
      async execute(statement, values) {
        await pool.query({ name: statement.name, text: statement.postgres, values });
      },
      async query(statement) {
        await pool.query(statement.postgres);
      },
      end: () => pool.end(),
    };
  }
  const pool = createPool({ uri: url, connectionLimit: poolSize, charset: 'utf8mb4' });
  return {
    async execute(statement, values) {
      await pool.execute(statement.mysql, values);
    },
    async query(statement) {
      await pool.query(statement.mysql);
    },
    end: () => pool.end(),
  };
}
