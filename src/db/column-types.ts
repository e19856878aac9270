import type { Kysely, RawBuilder } from 'kysely';

/** The column types that differ between SQL dialects; each store backend supplies its own. */
export interface ColumnTypes {
  /** The SQL dialect, for the rare migration whose best form differs by database (an index's shape). */
  dialect: 'mysql' | 'postgres' | 'sqlite';
  /** Auto-increment primary key. */
  id: RawBuilder<unknown>;
  bigint: RawBuilder<unknown>;
  timestamp: RawBuilder<unknown>;
  /** Identifiers compared byte for byte (provider ids are case-sensitive). */
  key: RawBuilder<unknown>;
  shortText: RawBuilder<unknown>;
  longText: RawBuilder<unknown>;
  /** Appended to CREATE TABLE (engine, charset), or null. */
  tableOptions: RawBuilder<unknown> | null;
}

export type Schema = Kysely<unknown>['schema'];

/** CREATE TABLE with the backend's id column and table options: every table's start. */
export function createTable(schema: Schema, types: ColumnTypes, name: string) {
  const builder = schema.createTable(name).addColumn('id', types.id, (c) => c.primaryKey().autoIncrement().notNull());
  return types.tableOptions ? builder.modifyEnd(types.tableOptions) : builder;
}
