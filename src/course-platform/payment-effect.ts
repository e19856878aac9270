import type { PaymentEffect } from './handlers.js';
import { PermanentError } from '../errors.js';

/**
 * Reads a course-platform outbox payload. A row another handler wrote with the same kind but another
 * shape fails for good, naming what is missing: retrying cannot make it readable.
 */
export function readPaymentEffect(payload: unknown): PaymentEffect {
  const value = (typeof payload === 'object' && payload !== null ? payload : {}) as Record<string, unknown>;
  const text = (name: string) => (typeof value[name] === 'string' ? value[name] : null);
  const provider = text('provider');
  const paymentId = text('paymentId');
  if (provider === null || paymentId === null) throw new PermanentError('outbox payload has no provider and paymentId');
  const amount = typeof value.amount === 'number' && Number.isFinite(value.amount) ? value.amount : null;
  return { provider, paymentId, userId: text('userId'), courseId: text('courseId'), amount, currency: text('currency'), email: text('email') };
}
