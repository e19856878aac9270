import type { Compilable, CompiledQuery, Kysely, QueryResult } from 'kysely';

const MARK = '\u0000value:';

type Placeholder<Values> = (name: keyof Values & string) => never;

/** Compiles `build` with placeholders; `bind` gives the parameters for one set of values. */
function compileWithPlaceholders<Values extends Record<string, unknown>, Row, DB>(
  db: Kysely<DB>,
  build: (db: Kysely<DB>, value: Placeholder<Values>) => Compilable<Row>,
): { compiled: CompiledQuery<Row>; bind: (values: Values) => unknown[] } {
  const used = new Set<string>();
  const compiled = build(db, (name) => {
    used.add(name);
    return `${MARK}${name}` as never;
  }).compile();
  if (compiled.sql.includes(MARK)) throw new Error('compiledStatement: a placeholder was inlined into the SQL text instead of bound');
  const slots = compiled.parameters.map((parameter) => (typeof parameter === 'string' && parameter.startsWith(MARK) ? parameter.slice(MARK.length) : null));
  for (const name of used) {
    if (!slots.includes(name)) throw new Error(`compiledStatement: placeholder ${name} is not a parameter of the compiled statement`);
  }
  return { compiled, bind: (values) => slots.map((name, i) => (name === null ? compiled.parameters[i] : values[name])) };
}

/**
 * A statement whose shape never changes, built and compiled by kysely once and then run with new
 * values. Kysely otherwise rebuilds, freezes and compiles the whole query tree on every call, a cost
 * the statement every delivery runs should not pay.
 *
 * `build` receives `value(name)`, a placeholder standing for `values[name]` at run time. Each
 * placeholder must reach the driver as a bound parameter: one that kysely would inline into the SQL
 * text is refused when the statement is compiled. It runs on `db`, or on `runner`, a transaction of it.
 */
export function compiledStatement<Values extends Record<string, unknown>, Row, DB>(
  db: Kysely<DB>,
  build: (db: Kysely<DB>, value: Placeholder<Values>) => Compilable<Row>,
): (values: Values, runner?: Kysely<DB>) => Promise<QueryResult<Row>> {
  const { compiled, bind } = compileWithPlaceholders(db, build);
  return (values, runner = db) => runner.executeQuery({ ...compiled, parameters: bind(values) });
}

/**
 * A statement with a part repeated once per row, such as `INSERT ... SELECT <row> UNION ALL SELECT
 * <row> ...`: compiled once for one row (`statement(db, rowPart(db, value))`), then written out for
 * any number of rows by repeating the row's SQL and parameters. Built by kysely per call, a batch of
 * 200 rows was 200 query trees to build, freeze and compile, and their garbage.
 */
export function compiledRowsStatement<Values extends Record<string, unknown>, Part extends Compilable<unknown>, Row, DB>(
  db: Kysely<DB>,
  rowPart: (db: Kysely<DB>, value: Placeholder<Values>) => Part,
  statement: (db: Kysely<DB>, part: Part) => Compilable<Row>,
  separator: string,
): (rows: Values[], runner?: Kysely<DB>) => Promise<QueryResult<Row>> {
  const row = compileWithPlaceholders(db, rowPart);
  const whole = compileWithPlaceholders<Values, Row, DB>(db, (db, value) => statement(db, rowPart(db, value)));
  const at = whole.compiled.sql.indexOf(row.compiled.sql);
  if (at < 0 || whole.compiled.parameters.length !== row.compiled.parameters.length) {
    throw new Error('compiledRowsStatement: the statement must hold the row part once, and no parameter of its own');
  }
  return repeatedRows(db, whole, row.compiled.sql, at, row.compiled.parameters.length, separator);
}

/**
 * An `INSERT ... VALUES (...)` of one row, compiled once, then written out for any number of rows as
 * one multi-row insert: `build` inserts a single row whose every value is a placeholder.
 */
export function compiledValuesStatement<Values extends Record<string, unknown>, Row, DB>(
  db: Kysely<DB>,
  build: (db: Kysely<DB>, value: Placeholder<Values>) => Compilable<Row>,
): (rows: Values[], runner?: Kysely<DB>) => Promise<QueryResult<Row>> {
  const whole = compileWithPlaceholders(db, build);
  // Every value a placeholder, so the row's tuple holds no parenthesis of its own.
  const tuple = / values (\([^()]*\))/i.exec(whole.compiled.sql);
  if (!tuple) throw new Error('compiledValuesStatement: the statement must insert one row of values');
  return repeatedRows(db, whole, tuple[1]!, tuple.index + tuple[0].length - tuple[1]!.length, whole.compiled.parameters.length, ', ');
}

/** The compiled statement `whole` with its row's SQL, found at `at`, repeated once per row. */
function repeatedRows<Values extends Record<string, unknown>, Row, DB>(
  db: Kysely<DB>,
  whole: { compiled: CompiledQuery<Row>; bind: (values: Values) => unknown[] },
  rowText: string,
  at: number,
  parametersPerRow: number,
  separator: string,
): (rows: Values[], runner?: Kysely<DB>) => Promise<QueryResult<Row>> {
  const before = whole.compiled.sql.slice(0, at);
  const after = whole.compiled.sql.slice(at + rowText.length);
  const rowSql = rowRepeater(rowText, parametersPerRow);
  return (rows, runner = db) => {
    if (rows.length === 0) throw new Error('compiled rows statement: at least one row');
    return runner.executeQuery({
      ...whole.compiled,
      sql: `${before}${rows.map((_, i) => rowSql(i)).join(separator)}${after}`,
      parameters: rows.flatMap(whole.bind),
    });
  };
}

/** A numbered placeholder (PostgreSQL's `$1`); MySQL and SQLite number theirs by position (`?`). */
const NUMBERED_PLACEHOLDER = /\$(\d+)/g;

/**
 * The SQL of a row part for the row at index i: with numbered placeholders, the i-th row's are
 * numbered after those of the rows before it. The row part is compiled by kysely, every value a
 * parameter, so a `$` followed by digits in its text is a placeholder.
 */
function rowRepeater(sql: string, parametersPerRow: number): (index: number) => string {
  if (!NUMBERED_PLACEHOLDER.test(sql)) return () => sql;
  return (index) => sql.replace(NUMBERED_PLACEHOLDER, (_, n: string) => `$${Number(n) + index * parametersPerRow}`);
}
