// Preloaded into a bench process (`node --import ./bench/statement-probe.mjs`): counts every statement
// the process sends through mysql2 (its diagnostics channels, so nothing of the service is patched),
// through pg (whose client's query method it wraps: pg has no such channels) or runs with
// better-sqlite3 (its statements' run, all and get, wrapped likewise), by shape: literals and
// placeholders become `?`, a list of rows or of values becomes one. When the
// process exits, it writes to $STATEMENT_PROBE_FILE, for each shape, how many times it ran, the rows
// it changed, the round trips' wall time (from the statement's send to its answer, waiting for the
// connection included), how many of its runs were sent unprepared (PostgreSQL without a statement
// name, MariaDB through mysql2's text protocol) and how many distinct texts it came in: a shape of
// many texts cannot be held prepared. The bench's backlog step reads it: the per-statement profile
// of processing.
import { createHash } from 'node:crypto';
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

/** Texts told apart per shape, up to this many (each kept as a digest): beyond it, the count says "at least". */
const MAX_TEXTS_PER_SHAPE = 10_000;

function count(sql, startedAt, error, changed, prepared) {
  const text = String(sql ?? '');
  const shape = statementShape(text);
  const entry = shapes.get(shape) ?? { count: 0, rowsChanged: 0, ms: 0, errors: 0, unprepared: 0, texts: new Set() };
  entry.count++;
  entry.ms += performance.now() - startedAt;
  if (error) entry.errors++;
  if (typeof changed === 'number') entry.rowsChanged += changed;
  if (!prepared) entry.unprepared++;
  if (entry.texts.size < MAX_TEXTS_PER_SHAPE) entry.texts.add(createHash('sha1').update(text).digest('base64'));
  shapes.set(shape, entry);
}

const started = new WeakMap();
for (const [name, prepared] of [
  ['mysql2:query', false],
  ['mysql2:execute', true],
])
  tracingChannel(name).subscribe({
    start(context) {
      started.set(context, performance.now());
    },
    asyncEnd(context) {
      count(context.query, started.get(context) ?? performance.now(), context.error, context.result?.affectedRows, prepared);
    },
  });

// Statements given as text or as a { text, values, name } config, answered through a promise (how
// kysely and the service run them); a cursor or a callback goes through uncounted.
const query = pg.Client.prototype.query;
pg.Client.prototype.query = function countedQuery(config, values, callback) {
  const startedAt = performance.now();
  const result = query.call(this, config, values, callback);
  const sql = typeof config === 'string' ? config : config?.text;
  const prepared = typeof config === 'object' && typeof config?.name === 'string';
  if (typeof sql === 'string' && typeof callback !== 'function' && typeof values !== 'function' && typeof result?.then === 'function') {
    result.then(
      (answer) => count(sql, startedAt, null, /^\s*(insert|update|delete)/i.test(sql) ? answer?.rowCount : undefined, prepared),
      (error) => count(sql, startedAt, error, undefined, prepared),
    );
  }
  return result;
};

// better-sqlite3 runs a statement inside the call that runs it, so the time counted is its execution
// (BEGIN and COMMIT included: kysely runs them as statements too). Every statement it runs is
// prepared; how often a text was prepared again is the service's statement cache's business, and
// its distinct texts show it. Loaded only where the process's
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
        count(this.source, startedAt, error, undefined, true);
        throw error;
      }
      count(this.source, startedAt, null, method === 'run' ? result.changes : undefined, true);
      return result;
    };
  }
}

process.on('exit', () => {
  if (!process.env.STATEMENT_PROBE_FILE) return;
  const statements = [...shapes].map(([shape, entry]) => ({ shape, ...entry, ms: Math.round(entry.ms), texts: entry.texts.size })).sort((a, b) => b.count - a.count);
  writeFileSync(process.env.STATEMENT_PROBE_FILE, `${JSON.stringify(statements, null, 2)}\n`);
});
