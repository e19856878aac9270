import { sql, type Kysely, type Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';

/** The course columns of `payments` this migration takes out. */
const COURSE_COLUMNS = ['user_id', 'course_id'] as const;
type CourseColumn = (typeof COURSE_COLUMNS)[number];

/**
 * The metadata key each column was read from when the providers' events filled it: Stripe's metadata
 * and Razorpay's notes under the same names, PayU's udf1 and udf2.
 */
const SOURCE_KEYS: Readonly<Record<string, Readonly<Record<CourseColumn, string>>>> = {
  stripe: { user_id: 'user_id', course_id: 'course_id' },
  razorpay: { user_id: 'user_id', course_id: 'course_id' },
  payu: { user_id: 'udf1', course_id: 'udf2' },
};

/** Payments read, and their metadata written, per statement. */
const BATCH = 1000;

interface PaymentRow {
  id: number | string;
  provider: string;
  metadata: string | null;
  user_id?: string | null;
  course_id?: string | null;
}

/**
 * `payments.user_id` and `course_id` leave the inbox's table: a payment's metadata holds what its
 * events carried, and a domain reads there what it needs (the course platform reads these same keys
 * by default). Each column held the value of one metadata key, trimmed, which the metadata itself
 * lacks for a payment recorded before 0013 added it, and reads otherwise where its first event
 * carried the key as no text (a boolean, say) and a later one as text. There the column's value is
 * written under its key, so that the value orders, enrollments and fulfilment requests were made
 * with is the one read from now on. Nothing else of the metadata changes. An installation that never
 * ran the course platform keeps its values the same way: in the payment's metadata, where any domain
 * and the forwarded events read them, and no table of a business it does not run is created for them.
 *
 * MySQL has no transactional DDL, so the migration may have stopped part way: a column already dropped
 * is skipped, and a payment whose metadata already reads its values is left as it is. The last pass
 * and the drop hold the table (LOCK TABLES on MySQL, the migration's transaction elsewhere), so a
 * value that a process of the previous version writes meanwhile is not lost with the columns.
 */
export function courseColumnsOut(types: ColumnTypes): Migration {
  return {
    async up(db) {
      const payments = (await db.introspection.getTables()).find((table) => table.name === 'payments');
      const present = COURSE_COLUMNS.filter((column) => payments?.columns.some((c) => c.name === column));
      if (present.length === 0) return;
      const moveAndDrop = async () => {
        await moveToMetadata(db, present);
        // One column per statement: SQLite drops a single column at a time.
        for (const column of present) await db.schema.alterTable('payments').dropColumn(column).execute();
      };
      if (types.dialect !== 'mysql') {
        // One transaction already (transactional DDL): the lock keeps writers out between the move and the drop.
        if (types.dialect === 'postgres') await sql`lock table payments in share row exclusive mode`.execute(db);
        await moveAndDrop();
        return;
      }
      await moveToMetadata(db, present);
      await sql`lock tables payments write`.execute(db);
      try {
        await moveAndDrop();
      } finally {
        await sql`unlock tables`.execute(db);
      }
    },
  };
}

/** Writes each payment's column values into its metadata where it does not read them already, in id order. */
async function moveToMetadata(db: Kysely<unknown>, columns: readonly CourseColumn[]): Promise<void> {
  const carried = sql.join(
    columns.map((column) => sql`${sql.ref(column)} is not null`),
    sql` or `,
  );
  for (let after = 0; ;) {
    const { rows } = await sql<PaymentRow>`select id, provider, metadata, ${sql.join(columns.map((column) => sql.ref(column)))} from payments
      where id > ${after} and (${carried}) order by id limit ${sql.lit(BATCH)}`.execute(db);
    if (rows.length === 0) return;
    const changed = rows.flatMap((row) => {
      const metadata = withColumns(row, columns);
      return metadata === null ? [] : [{ id: Number(row.id), metadata }];
    });
    if (changed.length > 0) {
      const cases = sql.join(
        changed.map(({ id, metadata }) => sql`when id = ${id} then ${metadata}`),
        sql` `,
      );
      await sql`update payments set metadata = case ${cases} else metadata end where id in (${sql.join(changed.map(({ id }) => id))})`.execute(db);
    }
    after = Number(rows[rows.length - 1]!.id);
  }
}

/** The payment's metadata text with its column values under their keys, or null when it reads them already. */
function withColumns(row: PaymentRow, columns: readonly CourseColumn[]): string | null {
  const metadata = parsed(row.metadata);
  let changed = false;
  for (const column of columns) {
    const value = row[column];
    if (value === null || value === undefined) continue;
    const key = SOURCE_KEYS[row.provider]?.[column] ?? column;
    const current = metadata[key];
    if (typeof current === 'string' && current.trim() === value) continue;
    metadata[key] = value;
    changed = true;
  }
  return changed ? JSON.stringify(metadata) : null;
}

/** Stored metadata as an object; text that is none (NULL, or not a JSON object) reads as empty. */
function parsed(text: string | null): Record<string, unknown> {
  if (text === null) return {};
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}
