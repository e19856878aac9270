/**
 * The team's own business, as a domain of the inbox: one licence per captured payment, in the team's
 * own table, and a welcome e-mail through the team's own outbox transport. No course platform.
 */
import { appendFile } from 'node:fs/promises';
import { definePaymentDomain, writeOutbox, type Generated, type InboxDatabase, type OutboxTransport } from 'webhook-inbox';

export interface LicencesTable {
  id: Generated<number>;
  /** `<provider>:<payment id>`: one licence per payment, whatever the deliveries. */
  payment_key: string;
  user_id: string;
  product: string;
  created_at: string;
}

/** The database as the handlers know it: the inbox's tables and the team's. */
export interface LicenceDatabase extends InboxDatabase {
  licences: LicencesTable;
}

/**
 * The welcome e-mail goes to a spool file that the team's mailer picks up. A line carries the outbox
 * key: a delivery repeated after a crash is a line the mailer has seen.
 */
function spoolTransport(file: string): OutboxTransport {
  return {
    async deliver(message) {
      await appendFile(file, `${JSON.stringify({ key: message.idempotencyKey, ...(message.payload as object) })}\n`);
      return { status: 'sent', outcome: `spooled to ${file}` };
    },
  };
}

export function licences(spoolFile: string) {
  return definePaymentDomain<LicenceDatabase>({
    name: 'licences',
    migrations: {
      '0001_licences': {
        async up(db) {
          await db.schema
            .createTable('licences')
            .addColumn('id', 'integer', (column) => column.primaryKey().autoIncrement())
            .addColumn('payment_key', 'varchar(255)', (column) => column.notNull().unique())
            .addColumn('user_id', 'varchar(255)', (column) => column.notNull())
            .addColumn('product', 'varchar(255)', (column) => column.notNull())
            .addColumn('created_at', 'varchar(32)', (column) => column.notNull())
            .execute();
        },
      },
    },
    handlers: {
      // In the processing transaction: the licence and the e-mail commit with "event processed", or not at all.
      captured: [
        async (context) => {
          const { tx, payment, now } = context;
          const userId = payment.metadata.user_id;
          // Not known yet: the handler runs again when a later event of the payment brings it.
          if (userId === undefined) return;
          const key = `${payment.provider}:${payment.payment_id}`;
          await tx
            .insertInto('licences')
            .orIgnore()
            .values({ payment_key: key, user_id: userId, product: payment.metadata.course_id ?? 'standard', created_at: now })
            .execute();
          writeOutbox(context, { kind: 'welcome_email', key: `welcome:${key}`, payload: { userId, email: payment.email } });
        },
      ],
    },
    transports: { welcome_email: spoolTransport(spoolFile) },
  });
}
