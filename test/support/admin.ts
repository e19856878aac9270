import { DeliveryStatsRecorder } from '../../src/observability/delivery-stats.js';
import { coursePlatform } from '../../src/course-platform/course-platform.js';
import type { PaymentHandlers } from '../../src/domain/applier.js';
import { Harness } from './harness.js';
import { stripeDelivery, stripePaymentEvent } from './signing.js';

/** Tokens of ADMIN_TOKENS for the admin tests: one operator, one viewer. */
export const ADMIN = {
  operator: 'op-token-0123456789abcdef0123456789abcdef',
  viewer: 'viewer-token-0123456789abcdef0123456789ab',
};

export const ADMIN_ENV = {
  ADMIN_TOKENS: `alice:operator:${ADMIN.operator},victor:viewer:${ADMIN.viewer}`,
  // One attempt: a failing event stays failed for an operator.
  MAX_ATTEMPTS: '1',
  // These tests present wrong tokens on purpose, from one address, more often than the default sign-in
  // limit allows; the limit's own tests (sessions.test.ts) use the default.
  ADMIN_SIGN_IN_FAILURES: '1000',
};

/** What a customer may type into payment metadata: it must render as text and run nothing. */
export const HOSTILE = {
  name: '<script>window.__pwned = 1</script>',
  note: '<img src=x onerror="window.__pwned = 2">',
  url: 'javascript:window.__pwned = 3',
};

/** What the admin service's capture handler does, set by the tests as they go. */
export interface AdminServiceState {
  /** Every capture fails. */
  failing: boolean;
  /** Captures of these payments fail this many more times (with markup in the error, which must show as text). */
  failures: Map<string, number>;
  /** Each capture takes this long first (a bulk replay that runs long enough to be cancelled). */
  delayMs: number;
}

/** A payment's event that fails its first attempts (see AdminServiceState.failures). */
export const FLAKY_ERROR = /^Error: <b>fulfilment<\/b> timed out \(test, \d left\)$/;

/**
 * A service with the admin on, a capture handler that fails as `state` says, and events: `paid`
 * stripe payments (one with hostile metadata) that processed, `failing` ones failed.
 */
export async function startAdminService(url: string, counts: { paid: number; failing: number }, prefix: string): Promise<{ service: Harness; state: AdminServiceState }> {
  const state: AdminServiceState = { failing: false, failures: new Map(), delayMs: 0 };
  const handlers: PaymentHandlers = {
    captured: [
      async ({ payment }) => {
        if (state.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, state.delayMs));
        if (state.failing) throw new Error('fulfilment backend down (test)');
        const left = state.failures.get(payment.payment_id) ?? 0;
        if (left > 0) {
          state.failures.set(payment.payment_id, left - 1);
          throw new Error(`<b>fulfilment</b> timed out (test, ${left} left)`);
        }
      },
    ],
  };
  const service = await Harness.start(url, ADMIN_ENV, { domains: [coursePlatform], handlers });
  const post = async (i: number, kind: string, object?: Record<string, unknown>) => {
    const response = await service.post(
      stripeDelivery(stripePaymentEvent(`evt_${prefix}_${kind}_${i}`, 'payment_intent.succeeded', `pi_${prefix}_${kind}_${i}`, { userId: `u_${i}`, courseId: 'c_1', object })),
    );
    if (response.status !== 200) throw new Error(`delivery answered ${response.status}`);
  };
  for (let i = 0; i < counts.paid; i++)
    await post(i, 'paid', i === 0 ? { description: HOSTILE.name, metadata: { note: HOSTILE.note, link: HOSTILE.url, user_id: 'u_0', course_id: 'c_1' } } : undefined);
  await service.waitUntilProcessed(counts.paid);
  state.failing = true;
  for (let i = 0; i < counts.failing; i++) await post(i, 'failing');
  await service.waitFor('the failing events failed', async () => (await service.countRows('webhook_events', 'failed')) === counts.failing);
  // The overview reads the counts each process writes every few seconds: written now, it shows them.
  if (service.inbox.metrics instanceof DeliveryStatsRecorder) await service.inbox.metrics.flush();
  return { service, state };
}
