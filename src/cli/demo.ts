import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../app.js';
import { systemClock } from '../clock.js';
import { loadConfig } from '../config/load.js';
import { buyerOf, coursePlatformSettings, type CoursePlatformTables } from '../course-platform/index.js';
import { storedMetadata } from '../domain/payment-change.js';
import type { ProviderName } from '../model/delivery.js';
import { shownOutcome, type ShownOutcome } from '../model/outcome.js';
import { simulateEvent, type SimulatedPayment } from '../ops/simulator/simulated-events.js';
import { sendEvent, type SendReport } from '../ops/simulator/send.js';
import { SERVICE_DOMAINS, serviceDomains } from '../service/domains.js';

export interface DemoStep {
  title: string;
  sent: string;
  answers: SendReport['answers'];
}

export interface DemoReport {
  databaseUrl: string;
  steps: DemoStep[];
  events: Array<{ provider: string; eventId: string; eventType: string; status: string } & ShownOutcome>;
  payments: Array<{ provider: string; paymentId: string; status: string; userId: string | null; courseId: string | null }>;
  effects: { orders: number; activeEnrollments: number; revokedEnrollments: number };
  /** Side effects queued in the outbox, by kind (receipt e-mails, fulfilment requests, ...). */
  outbox: Record<string, number>;
}

interface DemoDelivery {
  provider: ProviderName;
  type: string;
  payment: SimulatedPayment;
  repeat?: number;
  concurrent?: number;
  forged?: boolean;
}

/**
 * The whole product in one run: a service on a temporary SQLite file with generated secrets, and the
 * deliveries providers really make (several providers, retries, a concurrent burst, events out of
 * order, a forged signature), then what the database holds afterwards.
 */
export async function runDemo(options: { keep?: boolean; onStep?: (step: DemoStep) => void } = {}): Promise<DemoReport> {
  const dir = await mkdtemp(join(tmpdir(), 'webhook-inbox-demo-'));
  const secret = (prefix = '') => `${prefix}${randomBytes(16).toString('hex')}`;
  const config = loadConfig(
    {
      DATABASE_URL: `sqlite:${join(dir, 'demo.db')}`,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'silent',
      SWEEP_INTERVAL_MS: '200',
      STUCK_CHECK_CRON: 'off',
      // The demo shows the reference business at work, whatever the environment says.
      COURSE_PLATFORM: 'true',
      STRIPE_WEBHOOK_SECRET: secret('whsec_'),
      RAZORPAY_WEBHOOK_SECRET: secret(),
      PAYU_MERCHANT_KEY: secret().slice(0, 8),
      PAYU_MERCHANT_SALT: secret(),
    },
    { domains: SERVICE_DOMAINS },
  );
  const { app, inbox } = await createApp(config, { domains: serviceDomains(config) });
  try {
    const url = await app.listen({ host: config.host, port: 0 });
    const steps: DemoStep[] = [];
    const deliver = async (title: string, delivery: DemoDelivery) => {
      const event = simulateEvent(delivery.provider, delivery.type, delivery.payment, systemClock.now());
      const report = await sendEvent(event, config.providers, systemClock, {
        url,
        repeat: delivery.repeat ?? 1,
        concurrent: delivery.concurrent ?? 1,
        forged: delivery.forged,
      });
      const copies = report.deliveries.length > 1 ? ` x${report.deliveries.length}` : '';
      const step = { title, sent: `${delivery.provider} ${report.eventType} (payment ${report.paymentId})${copies}`, answers: report.answers };
      steps.push(step);
      options.onStep?.(step);
    };

    const alice = { userId: 'alice', courseId: 'typescript-101' };
    await deliver('Stripe checkout: payment created', { provider: 'stripe', type: 'payment_intent.created', payment: { paymentId: 'pi_demo_alice', ...alice } });
    await deliver('Stripe checkout: payment succeeded', { provider: 'stripe', type: 'payment_intent.succeeded', payment: { paymentId: 'pi_demo_alice', ...alice } });
    await deliver('Stripe sends charge.succeeded for the same payment: a second event id, no second enrollment', {
      provider: 'stripe',
      type: 'charge.succeeded',
      payment: { paymentId: 'pi_demo_alice', ...alice },
    });
    await deliver('Stripe retries one event 20 times at once (a concurrent burst)', {
      provider: 'stripe',
      type: 'payment_intent.succeeded',
      payment: { paymentId: 'pi_demo_bob', userId: 'bob', courseId: 'rust-201' },
      concurrent: 20,
    });
    await deliver('Stripe refunds Bob in full: his enrollment is revoked', {
      provider: 'stripe',
      type: 'charge.refunded',
      payment: { paymentId: 'pi_demo_bob', userId: 'bob', courseId: 'rust-201' },
    });
    const chitra = { paymentId: 'pay_demo_chitra', userId: 'chitra', courseId: 'go-301' };
    await deliver('Razorpay delivers out of order: captured first...', { provider: 'razorpay', type: 'payment.captured', payment: chitra });
    await deliver('...then the late authorization, which cannot move the payment back', { provider: 'razorpay', type: 'payment.authorized', payment: chitra });
    await deliver('PayU posts the success callback three times', {
      provider: 'payu',
      type: 'success',
      payment: { paymentId: '403993715531234567', userId: 'dev', courseId: 'sql-101' },
      repeat: 3,
    });
    await deliver('Someone forges a Razorpay webhook without the secret', {
      provider: 'razorpay',
      type: 'payment.captured',
      payment: { paymentId: 'pay_forged', userId: 'mallory', courseId: 'go-301' },
      forged: true,
    });

    const db = inbox.database.withTables<CoursePlatformTables>();
    const deadline = Date.now() + 15_000;
    for (;;) {
      const pending = await db.selectFrom('webhook_events').select('id').where('status', 'in', ['received', 'processing']).execute();
      if (pending.length === 0 || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }

    const events = await db.selectFrom('webhook_events').select(['provider', 'event_id', 'event_type', 'status', 'outcome', 'outcome_detail']).orderBy('id').execute();
    const payments = await db.selectFrom('payments').select(['provider', 'payment_id', 'status', 'metadata']).orderBy('id').execute();
    // Who bought which course, as the course platform reads it from each payment's metadata.
    const buyer = (payment: (typeof payments)[number]) => buyerOf({ ...payment, metadata: storedMetadata(payment.metadata) }, coursePlatformSettings(config)!.buyerFields);
    const count = async (query: Promise<unknown[]>) => (await query).length;
    const outbox: Record<string, number> = {};
    for (const { kind } of await db.selectFrom('outbox').select('kind').execute()) outbox[kind] = (outbox[kind] ?? 0) + 1;
    return {
      databaseUrl: config.databaseUrl,
      steps,
      events: events.map((e) => ({ provider: e.provider, eventId: e.event_id, eventType: e.event_type, status: e.status, ...shownOutcome(e.outcome, e.outcome_detail) })),
      payments: payments.map((p) => ({ provider: p.provider, paymentId: p.payment_id, status: p.status, ...buyer(p) })),
      effects: {
        orders: await count(db.selectFrom('orders').select('id').execute()),
        activeEnrollments: await count(db.selectFrom('enrollments').select('id').where('status', '=', 'active').execute()),
        revokedEnrollments: await count(db.selectFrom('enrollments').select('id').where('status', '=', 'revoked').execute()),
      },
      outbox,
    };
  } finally {
    await app.close();
    if (!options.keep) await rm(dir, { recursive: true, force: true });
  }
}
