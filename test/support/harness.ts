import type { FastifyInstance } from 'fastify';
import type { Kysely } from 'kysely';
import { createApp, createInbox, type AppOptions, type InboxOptions } from '../../src/app.js';
import type { Clock } from '../../src/clock.js';
import { SERVICE_DOMAINS, serviceDomains } from '../../src/service/domains.js';
import { loadConfig } from '../../src/config/load.js';
import { type Config } from '../../src/config/settings.js';
import type { Inbox } from '../../src/inbox.js';
import type { CoursePlatformDatabase, CoursePlatformTables } from '../../src/course-platform/schema.js';
import type { InboxDatabase } from '../../src/db/schema.js';
import { TEST_SECRETS, type Delivery } from './signing.js';

/** Real time plus an adjustable offset: tests jump past retry times and leases without sleeping. */
export class TestClock implements Clock {
  offsetMs = 0;

  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }

  advance(ms: number): void {
    this.offsetMs += ms;
  }
}

/** Rows a Stripe payment produced in each business table (the course platform's): the "exactly one effect" count. */
export async function paymentEffects(inboxDb: Kysely<InboxDatabase>, paymentId: string) {
  const db = inboxDb.withTables<CoursePlatformTables>();
  const count = async (table: 'payments' | 'orders' | 'enrollments') => (await db.selectFrom(table).select('id').where('payment_id', '=', paymentId).execute()).length;
  const receipts = await db.selectFrom('outbox').select('id').where('idempotency_key', '=', `receipt:stripe:${paymentId}`).execute();
  return { payments: await count('payments'), orders: await count('orders'), enrollments: await count('enrollments'), receipts: receipts.length };
}

/** Polls until `check` returns true; throws after `timeoutMs` naming what it waited for. */
export async function waitFor(description: string, check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${description}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The service's configuration (the course platform's settings with the inbox's) for a test database. */
export function testConfig(databaseUrl: string, env: Record<string, string> = {}): Config {
  return loadConfig(
    {
      DATABASE_URL: databaseUrl,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'silent',
      SWEEP_INTERVAL_MS: '100',
      // Far above a slow insert on a busy test machine; the back-pressure tests set their own.
      RECORD_TIMEOUT_MS: '10000',
      STRIPE_WEBHOOK_SECRET: TEST_SECRETS.stripe,
      RAZORPAY_WEBHOOK_SECRET: TEST_SECRETS.razorpay,
      PAYU_MERCHANT_KEY: TEST_SECRETS.payuKey,
      PAYU_MERCHANT_SALT: TEST_SECRETS.payuSalt,
      ...env,
    },
    { domains: SERVICE_DOMAINS },
  );
}

/**
 * The domains the service would run (the course platform unless COURSE_PLATFORM=false), unless
 * `options` say which, or bring handlers or an applier of their own, which a test means to run alone.
 */
function domainsFor(config: Config, options: InboxOptions): InboxOptions['domains'] {
  return options.domains ?? (options.handlers || options.apply ? [] : serviceDomains(config));
}

/** An inbox as the service builds it (see domainsFor), not started. */
export function serviceInbox(config: Config, options: InboxOptions = {}): Inbox {
  return createInbox(config, { ...options, domains: domainsFor(config, options) });
}

export interface Response {
  status: number;
  body: Record<string, unknown>;
}

/**
 * A running inbox listening on a real port, driven over HTTP like a provider would; with
 * MANAGEMENT_PORT in `env`, its management listener on a port of its own too (`managementUrl`).
 */
export class Harness {
  private constructor(
    readonly app: FastifyInstance,
    readonly inbox: Inbox,
    readonly clock: TestClock,
    readonly url: string,
    readonly managementUrl: string | null,
  ) {}

  /** The service's domains unless `options` say otherwise (see domainsFor). */
  static async start(databaseUrl: string, env: Record<string, string> = {}, options: AppOptions = {}): Promise<Harness> {
    const clock = new TestClock();
    const config = testConfig(databaseUrl, env);
    const { app, management, inbox } = await createApp(config, { clock, ...options, domains: domainsFor(config, options) });
    const address = await app.listen({ host: '127.0.0.1', port: 0 });
    const managementAddress = management ? await management.listen({ host: '127.0.0.1', port: 0 }) : null;
    return new Harness(app, inbox, clock, address, managementAddress);
  }

  get db(): Kysely<InboxDatabase> {
    return this.inbox.database;
  }

  /** The inbox's tables and the course platform's, which the service runs by default. */
  get courseDb(): Kysely<CoursePlatformDatabase> {
    return this.db.withTables<CoursePlatformTables>();
  }

  async post(delivery: Delivery, path = `/webhooks/${delivery.provider}`): Promise<Response> {
    return this.request('POST', path, delivery.headers, delivery.body);
  }

  async request(method: string, path: string, headers: Record<string, string> = {}, body?: string | Buffer): Promise<Response> {
    const response = await fetch(`${this.url}${path}`, { method, headers, body });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  }

  waitFor(description: string, check: () => Promise<boolean>, timeoutMs?: number): Promise<void> {
    return waitFor(description, check, timeoutMs);
  }

  async waitUntilProcessed(count: number, timeoutMs?: number): Promise<void> {
    await this.waitFor(`${count} processed events`, async () => (await this.countRows('webhook_events', 'processed')) >= count, timeoutMs);
  }

  async countRows(table: keyof CoursePlatformDatabase, status?: string): Promise<number> {
    let query = this.courseDb.selectFrom(table).select((eb) => eb.fn.countAll<number>().as('n'));
    if (status !== undefined) query = query.where('status', '=', status as never);
    const row = await query.executeTakeFirstOrThrow();
    return Number(row.n);
  }

  /** Row counts of every table, for "nothing was written" and "exactly one effect" assertions. */
  async allCounts(): Promise<Record<keyof CoursePlatformDatabase, number>> {
    const tables: Array<keyof CoursePlatformDatabase> = ['webhook_events', 'webhook_event_bodies', 'payments', 'orders', 'enrollments', 'outbox'];
    const counts = await Promise.all(tables.map((table) => this.countRows(table)));
    return Object.fromEntries(tables.map((table, i) => [table, counts[i]])) as Record<keyof CoursePlatformDatabase, number>;
  }

  async close(): Promise<void> {
    await this.app.close();
  }
}
