/**
 * DATABASE_URL: which store, and where. The schemes are configuration, so they are read here; the
 * database backends (db/) connect to what this accepts.
 */
export const DATABASE_URL_EXAMPLES = 'sqlite:./data/webhook-inbox.db, mysql://user:password@host:3306/database or postgres://user:password@host:5432/database';

export type DatabaseScheme = 'sqlite' | 'mysql' | 'postgres';

const SCHEMES: Record<string, DatabaseScheme> = { 'sqlite:': 'sqlite', 'mysql:': 'mysql', 'postgres:': 'postgres', 'postgresql:': 'postgres' };

/**
 * `sqlite:path` (relative to the working directory) or `sqlite:/absolute/path`. Returns the file
 * path, or a problem description for config validation.
 */
export function sqliteFilePath(url: URL): { path: string } | { problem: string } {
  if (url.host !== '') {
    return { problem: `names a host ("${url.host}"); use sqlite:relative/path.db or sqlite:/absolute/path.db` };
  }
  if (url.search !== '' || url.hash !== '') return { problem: 'takes no options after the file path' };
  const path = decodeURIComponent(url.pathname);
  if (path === '' || path.endsWith('/')) return { problem: 'must name a database file, e.g. sqlite:./data/webhook-inbox.db' };
  if (path === ':memory:') return { problem: 'cannot be an in-memory database: acknowledged events must survive a restart' };
  return { path };
}

/** The database a server URL names (`mysql://host/name` or `postgres://host/name` -> `name`). */
export function serverDatabaseName(url: string): string {
  return decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));
}

/** The store a DATABASE_URL selects, or what is wrong with it. */
export function databaseScheme(raw: string): { scheme: DatabaseScheme } | { problem: string } {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return { problem: `is not a valid URL (expected ${DATABASE_URL_EXAMPLES})` };
  }
  const scheme = SCHEMES[url.protocol];
  if (!scheme) return { problem: `must start with sqlite:, mysql:// or postgres:// (got "${url.protocol}")` };
  if (scheme === 'sqlite') {
    const file = sqliteFilePath(url);
    return 'problem' in file ? file : { scheme };
  }
  return serverDatabaseName(raw) === '' ? { problem: `must name a database, e.g. ${scheme}://user@host/webhook_inbox` } : { scheme };
}

/** What is wrong with a DATABASE_URL, or null when a store can open it. */
export function databaseUrlProblem(raw: string): string | null {
  const parsed = databaseScheme(raw);
  return 'problem' in parsed ? parsed.problem : null;
}
