/**
 * The team's own business in plain JavaScript, as a domain of the inbox: a captured payment opens a
 * membership in the team's own table and asks the team's door-access service, through the team's own
 * outbox transport, to let the member in. A refund ends the membership. No course platform.
 */
import { definePaymentDomain, headerValueOf, writeOutbox } from 'webhook-inbox';

/**
 * The door-access service is told over HTTP with the outbox key as its Idempotency-Key, so a retry
 * is one it has seen. The key holds the provider's payment id, which may be any text: headerValueOf
 * makes it a valid header, the same on every attempt.
 * @param {string} url
 * @returns {import('webhook-inbox').OutboxTransport}
 */
function doorAccess(url) {
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
      if (!response.ok) throw new Error(`door access answered HTTP ${response.status}`);
      return { status: 'sent', outcome: `door access HTTP ${response.status}` };
    },
  };
}

/**
 * The memberships domain: its table (a migration of its own), its handlers, its transport.
 * @param {string} doorAccessUrl
 */
export function memberships(doorAccessUrl) {
  return definePaymentDomain({
    name: 'memberships',
    migrations: {
      '0001_memberships': {
        async up(db) {
          await db.schema
            .createTable('memberships')
            .addColumn('id', 'integer', (column) => column.primaryKey().autoIncrement())
            // `<provider>:<payment id>`: one membership per payment, whatever the deliveries.
            .addColumn('payment_key', 'varchar(255)', (column) => column.notNull().unique())
            .addColumn('user_id', 'varchar(255)', (column) => column.notNull())
            .addColumn('plan', 'varchar(255)', (column) => column.notNull())
            .addColumn('status', 'varchar(16)', (column) => column.notNull())
            .execute();
        },
      },
    },
    handlers: {
      captured: [
        async (context) => {
          const { tx, payment } = context;
          const { user_id: userId, course_id: plan } = payment.metadata;
          if (userId === undefined || plan === undefined) return;
          const key = `${payment.provider}:${payment.payment_id}`;
          // The handler runs in the processing transaction: the row and the outbox row commit with the event, or neither does.
          await tx.insertInto('memberships').orIgnore().values({ payment_key: key, user_id: userId, plan, status: 'active' }).execute();
          writeOutbox(context, { kind: 'door_access', key: `door-access:${key}`, payload: { userId, plan } });
        },
      ],
      refunded: [
        async ({ tx, payment }) => {
          await tx.updateTable('memberships').set({ status: 'ended' }).where('payment_key', '=', `${payment.provider}:${payment.payment_id}`).execute();
        },
      ],
    },
    transports: { door_access: doorAccess(doorAccessUrl) },
  });
}
