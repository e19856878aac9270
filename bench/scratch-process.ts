import { createInbox } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { buildPool } from './deliveries.js';
import { createBenchDatabase, drain } from './database.js';
import { TEST_SECRETS } from '../test/support/signing.js';

const [storeKind, concurrency, n] = [process.argv[2] as 'mysql' | 'sqlite', process.argv[3] ?? '4', Number(process.argv[4] ?? 3000)];
const database = await createBenchDatabase(storeKind, 'mysql://root@127.0.0.1:3306', '/tmp/scratch');
const config = loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'silent', WORKER_CONCURRENCY: concurrency, STRIPE_WEBHOOK_SECRET: TEST_SECRETS.stripe, RAZORPAY_WEBHOOK_SECRET: TEST_SECRETS.razorpay, PAYU_MERCHANT_KEY: TEST_SECRETS.payuKey, PAYU_MERCHANT_SALT: TEST_SECRETS.payuSalt, SWEEP_INTERVAL_MS: "50" });
const inbox = createInbox(config);
const pool = buildPool({ events: n, prefix: 'x', seed: 1, duplicateShare: 0, burstShare: 0 });
// record all without processing: use store directly
let t = performance.now();
await Promise.all(pool.deliveries.map((d) => inbox.store.record(inbox.providers.verifier(d.path.split('/')[2]!).verify({ headers: Object.fromEntries(Object.entries(d.headers).map(([k, v]) => [k.toLowerCase(), v])), body: d.body, receivedAt: new Date() }))));
console.log(`recorded ${n} in ${(performance.now() - t).toFixed(0)} ms`);
t = performance.now();
inbox.start();
await new Promise((r) => setTimeout(r, 150));
await drain(inbox.store, 300000);
console.log(`processed ${n} in ${(performance.now() - t).toFixed(0)} ms -> ${(n / ((performance.now() - t) / 1000)).toFixed(0)}/s`);
await inbox.stop(1000);
await database.drop();
