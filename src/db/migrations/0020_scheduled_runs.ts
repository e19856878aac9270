import type { Migration } from 'kysely';
import { createTable, type ColumnTypes } from '../column-types.js';

/**
 * Jobs every serve process schedules (stuck check, provider alerts) run once per tick across them
 * all: the process that moves `last_tick` forward runs it. Alerts that fire are kept here too, so
 * an alert is posted once while it fires, whichever process checks.
 */
export function scheduledRuns(types: ColumnTypes): Migration {
  return {
    async up(db) {
      await createTable(db.schema, types, 'scheduled_runs')
        .addColumn('job', types.key, (c) => c.notNull())
        .addColumn('last_tick', types.timestamp, (c) => c.notNull())
        .addColumn('owner', types.key, (c) => c.notNull())
        .addUniqueConstraint('uq_scheduled_runs_job', ['job'])
        .execute();
      await createTable(db.schema, types, 'firing_alerts')
        .addColumn('alert_key', types.key, (c) => c.notNull())
        .addColumn('since', types.timestamp, (c) => c.notNull())
        .addUniqueConstraint('uq_firing_alerts_alert_key', ['alert_key'])
        .execute();
    },
  };
}
