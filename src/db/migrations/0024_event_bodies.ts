import { sql, type Kysely, type Migration } from 'kysely';
import type { ColumnTypes } from '../column-types.js';

/** Events whose bodies one statement of moveEventBodies copies. */
const BODY_COPY_BATCH = 2000;

/**
 * An event's payload and headers move to a row of their own, written with the event and never
 * updated: InnoDB rewrites a whole record whose size an update changes, so every claim and
 * completion of a row that held them wrote the payload to the redo log again (bench/HISTORY.md, "Event bodies in their own rows").
 */
export function eventBodies(types: ColumnTypes): Migration {
  return {
    async up(db) {
      await db.schema
        .createTable('webhook_event_bodies')
        .ifNotExists()
        .addColumn('event_row_id', types.id, (c) => c.primaryKey().notNull())
        .addColumn('payload', types.longText, (c) => c.notNull())
        .addColumn('headers', types.longText, (c) => c.notNull())
        .$call((builder) => (types.tableOptions ? builder.modifyEnd(types.tableOptions) : builder))
        .execute();
      await moveEventBodies(db, types);
    },
  };
}

/**
 * Copies every event's payload and headers to its body row, then drops them from webhook_events.
 * MySQL has no transactional DDL, so the migration may have stopped part way: rows already copied
 * are skipped, and the copy goes in batches, each its own short transaction. The last pass and the
 * drop hold both tables (a LOCK TABLES on MySQL, the migration's transaction elsewhere), so an event
 * that a process of the previous version records meanwhile is not lost with the columns.
 */
async function moveEventBodies(db: Kysely<unknown>, types: ColumnTypes): Promise<void> {
  const copyAfter = async (after: number): Promise<number | null> => {
    const last = await sql<{
      id: number | string | null;
    }>`select max(id) as id from (select id from webhook_events where id > ${after} order by id limit ${sql.lit(BODY_COPY_BATCH)}) batch`.execute(db);
    const upTo = last.rows[0]?.id;
    if (upTo === null || upTo === undefined) return null;
    await sql`insert into webhook_event_bodies (event_row_id, payload, headers) select id, payload, headers from webhook_events where id > ${after} and id <= ${Number(upTo)}`.execute(
      db,
    );
    return Number(upTo);
  };
  // Batches are copied in id order and each commits whole, so every event up to the highest body
  // copied has its body: a migration that stopped part way goes on from there.
  const copyAll = async (): Promise<void> => {
    const copied = await sql<{ id: number | string | null }>`select max(event_row_id) as id from webhook_event_bodies`.execute(db);
    for (let after: number | null = Number(copied.rows[0]?.id ?? 0); after !== null;) after = await copyAfter(after);
  };
  const drop = async (): Promise<void> => {
    // One column per statement: SQLite drops a single column at a time.
    for (const column of ['payload', 'headers']) await db.schema.alterTable('webhook_events').dropColumn(column).execute();
  };
  if (types.dialect !== 'mysql') {
    // One transaction already (transactional DDL): the lock keeps writers out between the copy and the drop.
    if (types.dialect === 'postgres') await sql`lock table webhook_events in share row exclusive mode`.execute(db);
    await copyAll();
    await drop();
    return;
  }
  await copyAll();
  await sql`lock tables webhook_events write, webhook_event_bodies write`.execute(db);
  try {
    await copyAll();
    await drop();
  } finally {
    await sql`unlock tables`.execute(db);
  }
}
