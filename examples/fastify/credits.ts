/**
 * The team's own business, as a domain of the inbox: prepaid credits. A captured payment adds its
 * amount to the customer's ledger, in the team's own table, and tells the team's CRM through the
 * team's own outbox transport. No course platform.
 */
import { definePaymentDomain, headerValueOf, writeOutbox, type Generated, type InboxDatabase, type OutboxTransport } from 'webhook-inbox';

export interface CreditLedgerTable {
  id: Generated<number>;
  /** `<provider>:<payment id>`: one top-up per payment, whatever the deliveries. */
  payment_key: string;
  user_id: string;
  /** In the currency's smallest unit. */
  amount: number;
  currency: string;
}

export interface CreditsDatabase extends InboxDatabase {
  credit_ledger: CreditLedgerTable;
}

/**
 * The CRM is told over HTTP, with the outbox key as its Idempotency-Key: a retry is one it has seen.
 * The key holds the provider's payment id, any text, so the header carries it through headerValueOf.
 */
function crmTransport(url: string): OutboxTransport {
  return {
    timeoutMs: 5000,
    async deliver(message) {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': headerValueOf(message.idempotencyKey) },
        body: JSON.stringify(message.payload),
        signal: AbortSignal.timeout(5000),
      });
      // Thrown: the dispatcher retries with backoff, and after MAX_ATTEMPTS leaves the row failed for an operator.
      if (!response.ok) throw new Error(`CRM answered HTTP ${response.status}`);
      return { status: 'sent', outcome: `CRM HTTP ${response.status}` };
    },
  };
}

export function credits(crmUrl: string) {
  return definePaymentDomain<CreditsDatabase>({
    name: 'credits',
    migrations: {
      '0001_credit_ledger': {
        async up(db) {
          await db.schema
            .createTable('credit_ledger')
            .addColumn('id', 'integer', (column) => column.primaryKey().autoIncrement())
            .addColumn('payment_key', 'varchar(255)', (column) => column.notNull().unique())
            .addColumn('user_id', 'varchar(255)', (column) => column.notNull())
            .addColumn('amount', 'bigint', (column) => column.notNull())
            .addColumn('currency', 'varchar(8)', (column) => column.notNull())
            .execute();
        },
      },
    },
    handlers: {
      captured: [
        async (context) => {
          const { tx, payment } = context;
          const userId = payment.metadata.user_id;
          if (userId === undefined || payment.amount === null || payment.currency === null) return;
          const key = `${payment.provider}:${payment.payment_id}`;
          await tx.insertInto('credit_ledger').orIgnore().values({ payment_key: key, user_id: userId, amount: payment.amount, currency: payment.currency }).execute();
          writeOutbox(context, { kind: 'crm_top_up', key: `crm-top-up:${key}`, payload: { userId, amount: payment.amount, currency: payment.currency } });
        },
      ],
    },
    transports: { crm_top_up: crmTransport(crmUrl) },
  });
}
