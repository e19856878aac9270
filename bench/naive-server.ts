import express from 'express';
import { createPool } from 'mysql2/promise';
import { InboxError } from '../src/errors.js';
import { ProviderRegistry } from '../src/providers/registry.js';
import { toDbTime } from '../src/db/schema.js';
import { TEST_SECRETS } from '../test/support/signing.js';

/**
 * The webhook handler a user would write by hand, the peer the bench quotes end-to-end capacity
 * against: Express and mysql2, and on each verified delivery three autocommit statements inline before
 * the 200: INSERT IGNORE the event as processing, INSERT IGNORE the enrollment it pays for, UPDATE the
 * event to processed. No lease, no outbox, no retry: two deliveries of one event both enroll, an error
 * between the statements leaves the event in processing for good. It writes into the service's own
 * tables (webhook_events, and enrollments, created as the course platform's migration creates it when the
 * database has none), so the bench measures its processing as it measures ours.
 *
 * It reads user, course and payment through the service's verifiers and field mapping, for all three
 * providers of the bench's mix: both targets then receive the same deliveries, and the peer's cost is
 * its statements, not a cheaper parser.
 *
 * Run as a process: BENCH_DATABASE_URL names the migrated database, DB_POOL_SIZE the connections (the
 * service's default, 10), PORT where to listen.
 */
const providers = new ProviderRegistry({
  stripe: { secrets: [TEST_SECRETS.stripe], toleranceSeconds: 300 },
  razorpay: { secrets: [TEST_SECRETS.razorpay] },
  payu: { merchantKey: TEST_SECRETS.payuKey, merchantSalt: TEST_SECRETS.payuSalt },
});
const pool = createPool({ uri: process.env.BENCH_DATABASE_URL, connectionLimit: Number(process.env.DB_POOL_SIZE ?? 10), charset: 'utf8mb4' });

const ENROLLMENTS = `CREATE TABLE IF NOT EXISTS enrollments (
  id BIGINT UNSIGNED AUTO_INCREMENT PRIMARY KEY,
  user_id VARCHAR(255) NOT NULL, course_id VARCHAR(255) NOT NULL, status VARCHAR(64) NOT NULL,
  provider VARCHAR(64) NOT NULL, payment_id VARCHAR(255) NOT NULL,
  created_at DATETIME(3) NOT NULL, updated_at DATETIME(3) NOT NULL,
  UNIQUE KEY uq_enrollments_user_course (user_id, course_id),
  KEY ix_enrollments_payment (provider, payment_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin`;

const RECORD = `INSERT IGNORE INTO webhook_events
  (provider, event_id, event_type, payment_id, payload, headers, status, attempts, created_at)
  VALUES (?, ?, ?, ?, ?, ?, 'processing', 1, ?)`;
const ENROLL = `INSERT IGNORE INTO enrollments (user_id, course_id, status, provider, payment_id, created_at, updated_at)
  VALUES (?, ?, 'active', ?, ?, ?, ?)`;
// Only while processing: a duplicate delivery, hours later, must not move the time the event was processed
// (the bench reads its lag from it); the statement still runs for every delivery.
const MARK_PROCESSED = `UPDATE webhook_events SET status = 'processed', processed_at = ?, outcome = 'applied' WHERE provider = ? AND event_id = ? AND status = 'processing'`;

const app = express();
app.post('/webhooks/:provider', express.raw({ type: () => true, limit: '1mb' }), async (req, res) => {
  try {
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const event = providers.verifier(req.params.provider).verify({ headers: req.headers, body, receivedAt: new Date() });
    const canonical = providers.toCanonical(event.provider, { eventType: event.eventType, payload: event.parsedPayload ?? JSON.parse(event.payload) });
    const payment = canonical.kind === 'payment' ? canonical : null;
    await pool.execute(RECORD, [event.provider, event.eventId, event.eventType, payment?.paymentId ?? null, event.payload, JSON.stringify(event.headers), toDbTime(new Date())]);
    if (payment?.userId && payment.courseId) {
      const now = toDbTime(new Date());
      await pool.execute(ENROLL, [payment.userId, payment.courseId, event.provider, payment.paymentId, now, now]);
    }
    await pool.execute(MARK_PROCESSED, [toDbTime(new Date()), event.provider, event.eventId]);
    res.json({ received: true });
  } catch (error) {
    if (error instanceof InboxError) {
      res.status(error.statusCode).json({ error: 'rejected' });
      return;
    }
    // Logged so a run's non-2xx can be told apart: the bench's figures are read against them.
    console.error(`naive handler failed: ${error instanceof Error ? error.message : String(error)}`);
    res.status(503).json({ error: 'store_unavailable' });
  }
});
// The bench waits for a listening target with a GET.
app.get('/webhooks/:provider', (_req, res) => void res.status(405).end());

await pool.query(ENROLLMENTS);
app.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => void pool.end().finally(() => process.exit(0)));
