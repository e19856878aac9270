import { createHash } from 'node:crypto';
import type { PostgresPool, PostgresPoolClient } from 'kysely';
import type pg from 'pg';

/**
 * Statements held prepared per connection. The acknowledgement path runs a few shapes (one per
 * record batch size, see recordBatchShape, and the compiled statements of record-in-one-statement.ts),
 * far fewer.
 */
export const MAX_PREPARED_PER_CONNECTION = 64;

/**
 * PostgreSQL refuses to run a prepared statement whose result columns changed since it was prepared:
 * "cached plan must not change result type". A `*` result changes whenever its table gains a column
 * (a migration, in this process or in a newer one of a rolling upgrade), so a statement with a `*`
 * anywhere in its text is never prepared; one that names its columns changes only with a column's
 * type. Should that happen, the name stays taken on that connection, so the connection is discarded
 * when it is released, and the statement is prepared afresh on another.
 */
const CACHED_PLAN_CHANGED = '0A000';

/**
 * A pool for kysely whose statements run as named prepared statements once a connection has seen
 * their text twice: the server then parses and plans each shape once per connection instead of at
 * every execution. A statement seen once, or beyond MAX_PREPARED_PER_CONNECTION shapes (statements
 * built per call, with lists of any length), runs unnamed as before. Processing's statements come in
 * a few shapes per batch size, which repeat under load, so its connections gain as the
 * acknowledgement path's do.
 */
export function preparingPool(pool: pg.Pool): PostgresPool {
  // kysely keeps per-connection state keyed by the object it is given, so each raw connection keeps one wrapper.
  const wrappers = new WeakMap<pg.PoolClient, PostgresPoolClient>();
  return {
    async connect() {
      const client = await pool.connect();
      let wrapper = wrappers.get(client);
      if (!wrapper) {
        wrapper = preparing(client);
        wrappers.set(client, wrapper);
      }
      return wrapper;
    },
    end: () => pool.end(),
  };
}

function preparing(client: pg.PoolClient): PostgresPoolClient {
  const seen = new Set<string>();
  const prepared = new Set<string>();
  let stalePlan = false;
  const run = async (text: string, values: readonly unknown[]) => {
    if (values.length > 0 && !prepared.has(text) && !text.includes('*')) {
      if (seen.has(text) && prepared.size < MAX_PREPARED_PER_CONNECTION) prepared.add(text);
      else if (seen.size < MAX_PREPARED_PER_CONNECTION * 4) seen.add(text);
    }
    if (!prepared.has(text)) return client.query(text, [...values]);
    try {
      // Names are per connection and must always mean the same text: a digest of it.
      return await client.query({ name: `wi_${createHash('sha1').update(text).digest('hex')}`, text, values: [...values] });
    } catch (error) {
      if ((error as { code?: unknown }).code === CACHED_PLAN_CHANGED) stalePlan = true;
      throw error;
    }
  };
  return {
    // A cursor (kysely's stream()) goes through as it is.
    query: ((textOrCursor: string | pg.Submittable, values: readonly unknown[]) =>
      typeof textOrCursor === 'string' ? run(textOrCursor, values) : client.query(textOrCursor)) as unknown as PostgresPoolClient['query'],
    release: (destroy?: boolean) => client.release(destroy === true || stalePlan),
  };
}
