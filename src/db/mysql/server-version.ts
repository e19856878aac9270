/** What a MySQL or MariaDB server can run, read from its `SELECT VERSION()`. */

/** The MariaDB release as major * 100 + minor (10.11 is 1011), or null for MySQL. */
function mariadbRelease(version: string): number | null {
  const mariadb = /^(\d+)\.(\d+)\.\d+-.*mariadb/i.exec(version);
  return mariadb ? Number(mariadb[1]) * 100 + Number(mariadb[2]) : null;
}

/** INSERT ... RETURNING: MariaDB from 10.5 on; no MySQL release has it. */
export function hasInsertReturning(version: string): boolean {
  const mariadb = mariadbRelease(version);
  return mariadb !== null && mariadb >= 1005;
}

/**
 * Whether migration 0027 creates the batch procedure, which reads its events with JSON_TABLE: MariaDB
 * from 10.6 on. MySQL 8 has JSON_TABLE too, but the procedure is proven on MariaDB alone; MySQL keeps
 * recording batches as transactions.
 */
export function recordsBatchesByProcedure(version: string): boolean {
  const mariadb = mariadbRelease(version);
  return mariadb !== null && mariadb >= 1006;
}
