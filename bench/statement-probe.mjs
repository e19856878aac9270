// Preloaded into a bench process (`node --import ./bench/statement-probe.mjs`): counts every statement
// the process sends through mysql2 (its diagnostics channels, so nothing of the service is patched), by
// shape: literals and placeholders become `?`, a list of rows or of values becomes one. When the
// process exits, it writes to $STATEMENT_PROBE_FILE, for each shape, how many times it ran, the rows
// it changed and the round trips' wall time (from the statement's send to its answer, waiting for the
// connection included). The bench's backlog step reads it: the per-statement profile of processing.
import { tracingChannel } from 'node:diagnostics_channel';
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import process from 'node:process';

const shapes = new Map();

/** One shape per statement text, whatever its values and however many rows or values it carries. */
export function statementShape(sql) {
  return sql
    .replace(/\s+/g, ' ')
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

const started = new WeakMap();
const subscriber = {
  start(context) {
    started.set(context, performance.now());
  },
  asyncEnd(context) {
    const shape = statementShape(String(context.query ?? ''));
    const entry = shapes.get(shape) ?? { count: 0, rowsChanged: 0, ms: 0, errors: 0 };
    entry.count++;
    entry.ms += performance.now() - (started.get(context) ?? performance.now());
    if (context.error) entry.errors++;
    const changed = context.result?.affectedRows;
    if (typeof changed === 'number') entry.rowsChanged += changed;
    shapes.set(shape, entry);
  },
};
for (const name of ['mysql2:query', 'mysql2:execute']) tracingChannel(name).subscribe(subscriber);

process.on('exit', () => {
  if (!process.env.STATEMENT_PROBE_FILE) return;
  const statements = [...shapes].map(([shape, entry]) => ({ shape, ...entry, ms: Math.round(entry.ms) })).sort((a, b) => b.count - a.count);
  writeFileSync(process.env.STATEMENT_PROBE_FILE, `${JSON.stringify(statements, null, 2)}\n`);
});
