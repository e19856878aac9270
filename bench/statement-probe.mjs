// Preloaded into a bench process (`node --import ./bench/statement-probe.mjs`): counts every statement
// the process sends through mysql2 (its diagnostics channels, so nothing of the service is patched),
// through pg (whose client's query method it wraps: pg has no such channels) or runs with
// better-sqlite3 (its statements' run, all and get, wrapped likewise), by shape: literals and
// placeholders become `?`, a list of rows or of values becomes one. When the
// process exits, it writes to $STATEMENT_PROBE_FILE, for each shape, how many times it ran, the rows
// it changed and the round trips' wall time (from the statement's send to its answer, waiting for the
// connection included). The bench's backlog step reads it: the per-statement profile of processing.
import { tracingChannel } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import process from 'node:process';
import pg from 'pg';

const shapes = new Map();

/** One shape per statement text, whatever its values and however many rows or values it carries. */
export function statementShape(sql) {
  return sql
    .replace(/\s+/g, ' ')
    .replace(/\$\d+/g, '?')
    .replace(/'(?:[^'\\]|\\.|'')*'/g, '?')
    .replace(/\b0x[0-9a-f]+\b/gi, '?')
    .replace(/(?<![\w`])-?\d+(?:\.\d+)?\b/g, '?')
    .replace(/\((?:\?|NULL|DEFAULT)(?:, ?(?:\?|NULL|DEFAULT))*\)/gi, '(…)')
    .replace(/\(…\)(?:, ?\(…\))+/g, '(…), …')
    .replace(/(?:when (?:\?|\((?:[^()]|\(…\))*\)) then (?:\?|NULL) )+/gi, 'when … then … ')
    .replace(/(\((?:[^()]|\(…\))*\))(?: or \1)+/g, '$1 or …')
    .trim()
    .slice(0, 400);
}

function count(sql, startedAt, error, changed) {
  const shape = statementShape(String(sql ?? ''));
  const entry = shapes.get(shape) ?? { count: 0, rowsChanged: 0, ms: 0, errors: 0 };
  entry.count++;
  entry.ms += performance.now() - startedAt;
  if (error) entry.errors++;
  if (typeof changed === 'number') entry.rowsChanged += changed;
  shapes.set(shape, entry);
}

const started = new WeakMap();
const subscriber = {
  start(context) {
    started.set(context, performance.now());
  },
  asyncEnd(context) {
    count(context.query, started.get(context) ?? performance.now(), context.error, context.result?.affectedRows);
  },
};
for (const name of ['mysql2:query', 'mysql2:execute']) tracingChannel(name).subscribe(subscriber);

// Statements given as text or as a { text, values, name } config, answered through a promise (how
// kysely and the service run them); a cursor or a callback goes through uncounted.
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function countedQuery(config, values, callback) {
  const startedAt = performance.now();
  const result = query.call(this, config, values, callback);
  const sql = typeof config === 'string' ? config : config?.text;
  if (typeof sql === 'string' && typeof callback !== 'function' && typeof values !== 'function' && typeof result?.then === 'function') {
    result.then(
      (answer) => count(sql, startedAt, null, /^\s*(insert|update|delete)/i.test(sql) ? answer?.rowCount : undefined),
      (error) => count(sql, startedAt, error, undefined),
    );
  }
  return result;
};

// better-sqlite3 runs a statement inside the call that runs it, so the time counted is its execution
// (BEGIN and COMMIT included: kysely runs them as statements too). Loaded only where the process's
// store is SQLite, so the other workers' memory and start-up are as without the probe.
if (process.env.DATABASE_URL?.startsWith('sqlite:')) {
  const { default: Database } = await import('better-sqlite3');
  const scratch = new Database(':memory:');
  const statement = Object.getPrototypeOf(scratch.prepare('select 1'));
  scratch.close();
  for (const method of ['run', 'all', 'get']) {
    const execute = statement[method];
    statement[method] = function countedStatement(...values) {
      const startedAt = performance.now();
      let result;
      try {
        result = execute.apply(this, values);
      } catch (error) {
        count(this.source, startedAt, error, undefined);
        throw error;
      }
      count(this.source, startedAt, null, method === 'run' ? result.changes : undefined);
      return result;
    };
  }
}

process.on('exit', () => {
  if (!process.env.STATEMENT_PROBE_FILE) return;
  const statements = [...shapes].map(([shape, entry]) => ({ shape, ...entry, ms: Math.round(entry.ms) })).sort((a, b) => b.count - a.count);
  writeFileSync(process.env.STATEMENT_PROBE_FILE, `${JSON.stringify(statements, null, 2)}\n`);
});
