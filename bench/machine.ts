import { cpus, loadavg, release, totalmem } from 'node:os';
import { createConnection } from 'mysql2/promise';
import pg from 'pg';
import type { BenchSettings } from './settings.js';
import { TARGETS } from './targets.js';

/** The 1-minute load average, a sign of how much else ran on the machine during the bench. */
export function loadAverage(): number {
  return Math.round(loadavg()[0]! * 10) / 10;
}

export async function describeMachine(settings: Pick<BenchSettings, 'mysqlUrl' | 'postgresUrl' | 'targets'>, loadAtStart: number): Promise<Record<string, string | number>> {
  const machine: Record<string, string | number> = {
    loadAverage: `${loadAtStart} at start, ${loadAverage()} at end (1-minute)`,
    cpu: `${cpus().length} x ${cpus()[0]?.model ?? 'unknown'}`,
    memoryGb: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    node: process.version,
  };
  const connection = await createConnection({ uri: settings.mysqlUrl });
  try {
    const [rows] = await connection.query('SELECT VERSION() AS version, @@innodb_flush_log_at_trx_commit AS flush, @@innodb_buffer_pool_size AS pool');
    const row = (rows as Array<{ version: string; flush: number; pool: number }>)[0]!;
    machine.database = `MariaDB/MySQL ${row.version}, innodb_flush_log_at_trx_commit=${row.flush}, buffer pool ${Math.round(row.pool / 2 ** 20)} MB`;
  } finally {
    await connection.end();
  }
  if (settings.targets.some((name) => TARGETS[name]!.store === 'postgres')) {
    const client = new pg.Client({ connectionString: `${settings.postgresUrl.replace(/\/$/, '')}/postgres` });
    await client.connect();
    try {
      const { rows } = await client.query<Record<string, string>>(
        `select current_setting('server_version') as version, current_setting('synchronous_commit') as sync, current_setting('shared_buffers') as buffers`,
      );
      const row = rows[0]!;
      machine.postgres = `PostgreSQL ${row.version}, synchronous_commit=${row.sync}, shared_buffers ${row.buffers}`;
    } finally {
      await client.end();
    }
  }
  return machine;
}
