import { createServer } from 'node:http';
import { InboxError } from '../src/errors.js';
import { testProviders } from './test-providers.js';
import { BASELINE_INSERT, baselineInsertValues, INLINE_BODY_COLUMNS, openPeerDatabase } from './peer-database.js';

/**
 * The floor of a durable acknowledgement: node:http, the same signature check as the service, ONE
 * autocommit INSERT IGNORE of the verified event into the same webhook_events table (same indexes,
 * its payload and headers in the row: INLINE_BODY_COLUMNS), then 200; on PostgreSQL the same INSERT with ON CONFLICT DO NOTHING. No framework, no logging, no processing. Every webhook-inbox figure is quoted against it.
 *
 * Run as a process: BENCH_DATABASE_URL names the migrated database, DB_POOL_SIZE the connections
 * (the service's default, 10), PORT where to listen. With BENCH_NO_DATABASE set it answers 200 right
 * after the signature check: the bench's ceiling target.
 */
const providers = testProviders();
const pool = process.env.BENCH_NO_DATABASE === undefined ? openPeerDatabase(process.env.BENCH_DATABASE_URL!) : null;

const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    const answer = (status: number, body: string) => res.writeHead(status, { 'content-type': 'application/json' }).end(body);
    try {
      const event = providers.verifier(req.url!.slice('/webhooks/'.length)).verify({ headers: req.headers, body: Buffer.concat(chunks), receivedAt: new Date() });
      if (!pool) return answer(200, '{"received":true}');
      pool.execute(BASELINE_INSERT, baselineInsertValues(event, new Date())).then(
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
