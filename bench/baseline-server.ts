import { createServer } from 'node:http';
import { InboxError } from '../src/errors.js';
import { ProviderRegistry } from '../src/providers/registry.js';
import { toDbTime } from '../src/db/schema.js';
import { TEST_SECRETS } from '../test/support/signing.js';
import { INLINE_BODY_COLUMNS, openPeerDatabase, type PeerStatement } from './peer-database.js';

/**
 * The floor of a durable acknowledgement: node:http, the same signature check as the service, ONE
 * autocommit INSERT IGNORE of the verified event into the same webhook_events table (same indexes,
 * its payload and headers in the row: INLINE_BODY_COLUMNS), then 200; on PostgreSQL the same INSERT with ON CONFLICT DO NOTHING. No framework, no logging, no processing. Every webhook-inbox figure is quoted against it.
 *
 * Run as a process: BENCH_DATABASE_URL names the migrated database, DB_POOL_SIZE the connections
 * (the service's default, 10), PORT where to listen. With BENCH_NO_DATABASE set it answers 200 right
 * after the signature check: the bench's ceiling target.
 */
const providers = new ProviderRegistry({
  stripe: { secrets: [TEST_SECRETS.stripe], toleranceSeconds: 300 },
  razorpay: { secrets: [TEST_SECRETS.razorpay] },
  payu: { merchantKey: TEST_SECRETS.payuKey, merchantSalt: TEST_SECRETS.payuSalt },
});
const pool = process.env.BENCH_NO_DATABASE === undefined ? openPeerDatabase(process.env.BENCH_DATABASE_URL!) : null;

const COLUMNS = `webhook_events
  (provider, event_id, event_type, payload, headers, status, attempts, next_attempt_at, created_at)`;
const INSERT: PeerStatement = {
  name: 'baseline_insert',
  mysql: `INSERT IGNORE INTO ${COLUMNS} VALUES (?, ?, ?, ?, ?, 'received', 0, ?, ?)`,
  postgres: `INSERT INTO ${COLUMNS} VALUES ($1, $2, $3, $4, $5, 'received', 0, $6, $7) ON CONFLICT DO NOTHING`,
};

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const answer = (status: number, body: string) => res.writeHead(status, { 'content-type': 'application/json' }).end(body);
    try {
      const event = providers.verifier(req.url!.slice('/webhooks/'.length)).verify({ headers: req.headers, body: Buffer.concat(chunks), receivedAt: new Date() });
      if (!pool) return answer(200, '{"received":true}');
      const now = toDbTime(new Date());
      pool.execute(INSERT, [event.provider, event.eventId, event.eventType, event.payload, JSON.stringify(event.headers), now, now]).then(
        () => answer(200, '{"received":true}'),
        (error: unknown) => {
          // Logged so a run's non-2xx can be told apart: the bench's figures are read against them.
          console.error(`insert failed: ${error instanceof Error ? error.message : String(error)}`);
          answer(503, '{"error":"store_unavailable"}');
        },
      );
    } catch (error) {
      answer(error instanceof InboxError ? error.statusCode : 500, '{"error":"rejected"}');
    }
  });
});

await pool?.query(INLINE_BODY_COLUMNS);
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => void Promise.resolve(pool?.end()).finally(() => process.exit(0)));
