import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Command } from 'commander';
import { sql } from 'kysely';
import { encodeCursor } from '../src/admin/event-list.js';
import { createApp } from '../src/app.js';
import { positiveIntegerOption, wholeNumberOption } from '../src/cli/context.js';
import { loadConfig } from '../src/config/load.js';
import { createBenchDatabase, DEFAULT_SERVERS } from './database.js';

/**
 * How long a page of the admin event list takes on a large webhook_events table (issue 30: a page of
 * 50 on 5M rows within 200 ms of server time). Fills the table in the database itself (SQLite: one
 * INSERT ... SELECT from a recursive CTE; MariaDB: INSERT ... SELECT from the SEQUENCE engine's
 * seq_1_to_N, in chunks; PostgreSQL: INSERT ... SELECT from generate_series, in chunks), then times GET /admin/api/events through fastify's inject (server time,
 * no network) for the first page, a deep keyset page and each filter.
 *
 *   node --import tsx bench/admin-event-page.ts --store sqlite|mysql|postgres [--rows 5000000] [--samples 30]
 */
const options = new Command()
  .name('node --import tsx bench/admin-event-page.ts')
  .option('--store <store>', 'sqlite, mysql or postgres', 'sqlite')
  .option('--mysql-url <url>', 'MariaDB server for --store mysql', DEFAULT_SERVERS.mysqlUrl)
  .option('--postgres-url <url>', 'PostgreSQL server for --store postgres', DEFAULT_SERVERS.postgresUrl)
  .option('--rows <n>', 'rows in webhook_events', wholeNumberOption(100_000_000), 5_000_000)
  .option('--samples <n>', 'requests per case', positiveIntegerOption, 30)
  .parse()
  .opts<{ store: 'sqlite' | 'mysql' | 'postgres'; mysqlUrl: string; postgresUrl: string; rows: number; samples: number }>();
if (!['sqlite', 'mysql', 'postgres'].includes(options.store)) throw new Error(`--store: must be sqlite, mysql or postgres, not ${options.store}`);

const TOKEN = 'bench-token-0123456789abcdef0123456789abcdef';
/** Row n was received START + n/2 seconds: 5M rows span about 29 days. */
const START_EPOCH = Date.UTC(2026, 10, 1) / 1000;
const CHUNK = 500_000;

const workDir = mkdtempSync(join(tmpdir(), 'wi-admin-bench-'));
const database = await createBenchDatabase(options.store, { mysqlUrl: options.mysqlUrl, postgresUrl: options.postgresUrl }, workDir);
const db = database.store.db;
const fillStarted = performance.now();
if (options.store === 'sqlite') {
  await sql`INSERT INTO webhook_events (provider, event_id, event_type, status, attempts, created_at, processed_at, payment_id, last_error)
    WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ${options.rows})
    SELECT CASE n % 3 WHEN 0 THEN 'stripe' WHEN 1 THEN 'razorpay' ELSE 'payu' END, 'evt_' || n,
      CASE n % 5 WHEN 0 THEN 'payment_intent.succeeded' WHEN 1 THEN 'charge.refunded' WHEN 2 THEN 'payment.captured' WHEN 3 THEN 'payment.failed' ELSE 'order.paid' END,
      CASE WHEN n % 100 = 0 THEN 'failed' ELSE 'processed' END, 1,
      strftime('%Y-%m-%d %H:%M:%f', ${START_EPOCH} + n / 2.0, 'unixepoch'), strftime('%Y-%m-%d %H:%M:%f', ${START_EPOCH} + n / 2.0 + 1, 'unixepoch'),
      'pi_' || (n / 2), CASE WHEN n % 100 = 0 THEN 'handler failed' ELSE NULL END
    FROM seq`.execute(db);
} else if (options.store === 'postgres') {
  for (let first = 1; first <= options.rows; first += CHUNK) {
    const last = Math.min(options.rows, first + CHUNK - 1);
    await sql`INSERT INTO webhook_events (provider, event_id, event_type, status, attempts, created_at, processed_at, payment_id, last_error)
      SELECT (ARRAY['stripe', 'razorpay', 'payu'])[1 + n % 3], 'evt_' || n,
        (ARRAY['payment_intent.succeeded', 'charge.refunded', 'payment.captured', 'payment.failed', 'order.paid'])[1 + n % 5],
        CASE WHEN n % 100 = 0 THEN 'failed' ELSE 'processed' END, 1,
        to_char(to_timestamp(${START_EPOCH} + n / 2.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS'),
        to_char(to_timestamp(${START_EPOCH} + n / 2.0 + 1) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.MS'),
        'pi_' || (n / 2), CASE WHEN n % 100 = 0 THEN 'handler failed' END
      FROM generate_series(${first}::bigint, ${last}::bigint) AS n`.execute(db);
    console.error(`filled ${last} rows`);
  }
  await sql`ANALYZE webhook_events`.execute(db);
} else {
  for (let first = 1; first <= options.rows; first += CHUNK) {
    const last = Math.min(options.rows, first + CHUNK - 1);
    await sql`INSERT INTO webhook_events (provider, event_id, event_type, status, attempts, created_at, processed_at, payment_id, last_error)
      SELECT ELT(1 + seq % 3, 'stripe', 'razorpay', 'payu'), CONCAT('evt_', seq),
        ELT(1 + seq % 5, 'payment_intent.succeeded', 'charge.refunded', 'payment.captured', 'payment.failed', 'order.paid'),
        IF(seq % 100 = 0, 'failed', 'processed'), 1,
        TIMESTAMPADD(MICROSECOND, seq * 500000, FROM_UNIXTIME(${START_EPOCH})), TIMESTAMPADD(MICROSECOND, seq * 500000 + 1000000, FROM_UNIXTIME(${START_EPOCH})),
        CONCAT('pi_', seq DIV 2), IF(seq % 100 = 0, 'handler failed', NULL)
      FROM ${sql.raw(`seq_${first}_to_${last}`)}`.execute(db);
    console.error(`filled ${last} rows`);
  }
  await sql`ANALYZE TABLE webhook_events`.execute(db);
}
// Each event's body, made from its event id (evt_<n>): the text search reads these payloads.
const payload = {
  sqlite: sql`'{"id":"' || event_id || '","note":"customer note ' || substr(event_id, 5) || '"}'`,
  postgres: sql`'{"id":"' || event_id || '","note":"customer note ' || substr(event_id, 5) || '"}'`,
  mysql: sql`CONCAT('{"id":"', event_id, '","note":"customer note ', SUBSTRING(event_id, 5), '"}')`,
}[options.store];
for (let first = 1; first <= options.rows; first += CHUNK) {
  await sql`INSERT INTO webhook_event_bodies (event_row_id, payload, headers)
    SELECT id, ${payload}, '{}' FROM webhook_events WHERE id >= ${first} AND id < ${first + CHUNK}`.execute(db);
}
const fillSeconds = (performance.now() - fillStarted) / 1000;
console.error(`filled ${options.rows} rows in ${fillSeconds.toFixed(0)} s`);

const config = loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'warn', ADMIN_TOKENS: `bench:viewer:${TOKEN}`, MIGRATE_ON_START: 'false' });
const { app } = await createApp(config, { workers: false });
const iso = (epoch: number) => new Date(epoch * 1000).toISOString();
const middle = Math.floor(options.rows / 2);
const middleEpoch = START_EPOCH + middle / 2;
const deepRow = await db.selectFrom('webhook_events').select(['id', 'created_at']).where('event_id', '=', `evt_${middle}`).executeTakeFirstOrThrow();
const cases: Array<[string, string]> = [
  ['first page', ''],
  ['deep keyset page (middle of the table)', `cursor=${encodeCursor(deepRow.created_at, deepRow.id)}`],
  ['provider=razorpay', 'provider=razorpay'],
  ['status=failed', 'status=failed'],
  ['type=charge.refunded', 'type=charge.refunded'],
  ['paymentId', `paymentId=pi_${Math.floor(middle / 2)}`],
  ['eventId', `eventId=evt_${middle}`],
  ['from/to: one hour in the middle', `from=${iso(middleEpoch)}&to=${iso(middleEpoch + 3600)}`],
  ['provider=payu&status=failed', 'provider=payu&status=failed'],
  ['status=failed, deep page', `status=failed&cursor=${encodeCursor(deepRow.created_at, deepRow.id)}`],
  ['q= text search, one hour window', `q=${encodeURIComponent(`note ${middle + 10}`)}&from=${iso(middleEpoch)}&to=${iso(middleEpoch + 3600)}`],
  ['q= text search, 24 h window (the largest allowed)', `q=${encodeURIComponent(`note ${middle + 10}`)}&from=${iso(middleEpoch)}&to=${iso(middleEpoch + 86_400)}`],
];
console.log(`| case (limit=50, ${options.rows} rows, ${options.store}) | median ms | p95 ms | rows |`);
console.log('|---|---|---|---|');
for (const [name, query] of cases) {
  const times: number[] = [];
  let rows = 0;
  for (let i = 0; i < options.samples + 2; i++) {
    const started = performance.now();
    const response = await app.inject({ method: 'GET', url: `/admin/api/events?limit=50${query ? `&${query}` : ''}`, headers: { authorization: `Bearer ${TOKEN}` } });
    const elapsed = performance.now() - started;
    if (response.statusCode !== 200) throw new Error(`${name}: ${response.statusCode} ${response.body}`);
    rows = (JSON.parse(response.body) as { events: unknown[] }).events.length;
    // The first two warm the caches (statement, pages); the rest are timed.
    if (i >= 2) times.push(elapsed);
  }
  const sorted = times.sort((a, b) => a - b);
  const at = (fraction: number) => sorted[Math.min(sorted.length - 1, Math.ceil(fraction * sorted.length) - 1)]!.toFixed(1);
  console.log(`| ${name} | ${at(0.5)} | ${at(0.95)} | ${rows} |`);
}
await app.close();
await database.drop();
rmSync(workDir, { recursive: true, force: true });
