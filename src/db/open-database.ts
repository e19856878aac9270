import { databaseScheme, type DatabaseScheme } from '../config/database-url.js';
import type { StoreBackend } from './backend.js';
import { mysqlBackend } from './mysql/backend.js';
import { postgresBackend } from './postgres/backend.js';
import { sqliteBackend } from './sqlite/backend.js';

const BACKENDS: Record<DatabaseScheme, StoreBackend> = { mysql: mysqlBackend, postgres: postgresBackend, sqlite: sqliteBackend };

/** The backend of a DATABASE_URL (validated by config/database-url.ts), chosen once by its scheme. */
export function backendFor(url: string): StoreBackend {
  const parsed = databaseScheme(url);
  if ('problem' in parsed) throw new Error(`DATABASE_URL ${parsed.problem}`);
  return BACKENDS[parsed.scheme];
}
