import type { IncomingHttpHeaders } from 'node:http';
import type { BaseLogger } from 'pino';
import { describeError, InboxError } from '../errors.js';
import type { Inbox } from '../inbox.js';
import type { ProviderName } from '../model/delivery.js';
import { payuMediaType } from '../providers/payu/verify.js';

/** What a delivery's log lines are written to: the inbox's logger, or a request's child of it. */
type DeliveryLogger = Pick<BaseLogger, 'info' | 'warn' | 'error'>;

/** An HTTP answer in no framework's terms: what to send back to the provider. */
export interface DeliveryAnswer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/** What a delivery's log line says of its outcome: the event and how it was recorded, or why it was refused. */
export interface DeliveryVerdict {
  eventId?: string;
  outcome?: string;
  error?: string;
  reason?: string;
}

/** A refused delivery as the admin's "rejected deliveries" keeps it: never its body or signature. */
export interface RejectedDelivery {
  provider: string;
  statusCode: number;
  reason: string;
  remoteAddress: string | null;
  bodyBytes: number | null;
}

/**
 * The answer to an error the inbox raised: its status and stable code (the README's table). A 503
 * asks the provider to come back (Retry-After), as it will anyway.
 */
export function inboxErrorAnswer(error: InboxError): DeliveryAnswer {
  return { status: error.statusCode, headers: error.statusCode === 503 ? { 'retry-after': '5' } : {}, body: { error: error.code, message: error.message } };
}

/**
 * Throws what a delivery to `provider` is refused for before its body is read: a provider that is
 * not configured (503), a media type PayU never posts (415).
 */
export function refuseBeforeBody(inbox: Inbox, provider: ProviderName, headers: IncomingHttpHeaders): void {
  inbox.providers.verifier(provider);
  if (provider === 'payu') payuMediaType(headers);
}

/**
 * Receives one delivery whose body was read whole: the answer, and the verdict its log line carries.
 * Never throws: an unexpected error is logged and answered 500, so the provider retries.
 */
export async function receiveDelivery(
  inbox: Inbox,
  provider: string,
  delivery: { headers: IncomingHttpHeaders; body: Buffer },
  logger: DeliveryLogger = inbox.logger,
): Promise<{ answer: DeliveryAnswer; verdict: DeliveryVerdict }> {
  try {
    const received = await inbox.verifyAndReceive(provider, { headers: delivery.headers, body: delivery.body, receivedAt: inbox.clock.now() });
    return { answer: { status: 200, headers: {}, body: { received: true, ...received } }, verdict: { eventId: received.eventId, outcome: received.outcome } };
  } catch (error) {
    if (error instanceof InboxError) return { answer: inboxErrorAnswer(error), verdict: { error: error.code, reason: describeError(error) } };
    logger.error({ err: error, provider }, 'unexpected error');
    return {
      answer: { status: 500, headers: {}, body: { error: 'internal_error', message: 'internal error; the delivery was not acknowledged' } },
      verdict: { error: 'internal_error', reason: describeError(error) },
    };
  }
}

/**
 * Receives one delivery for a server that is not fastify (Express, Koa, node:http): give it the raw
 * body, exactly the bytes received (Express: `express.raw({ type: () => true })`), and send back what
 * it answers. Never throws: an unexpected error is logged and answered 500, so the provider retries.
 */
export async function answerDelivery(inbox: Inbox, provider: string, delivery: { headers: IncomingHttpHeaders; body: Buffer }): Promise<DeliveryAnswer> {
  return (await receiveDelivery(inbox, provider, delivery)).answer;
}

/** An answered delivery, as its one log line and (when refused) the rejected-deliveries list see it. */
export interface AnsweredDelivery {
  provider: string;
  statusCode: number;
  verdict: DeliveryVerdict | undefined;
  ackMs: number;
  remoteAddress: string | null;
  declaredLength: string | undefined;
}

/**
 * One log line per delivery, written when the answer has gone out: what came in, how it was answered
 * and how long it took; never the body or a signature. A refusal also goes to `onRejected`.
 */
export function reportAnswered(logger: DeliveryLogger, onRejected: ((rejection: RejectedDelivery) => void) | undefined, delivery: AnsweredDelivery): void {
  const fields = { provider: delivery.provider, ...delivery.verdict, statusCode: delivery.statusCode, ackMs: Math.round(delivery.ackMs * 100) / 100 };
  if (delivery.statusCode === 200) {
    logger.info(fields, 'delivery acknowledged');
    return;
  }
  logger[delivery.statusCode >= 500 ? 'warn' : 'info'](fields, 'delivery rejected');
  const length = Number(delivery.declaredLength);
  onRejected?.({
    provider: delivery.provider,
    statusCode: delivery.statusCode,
    reason: fields.reason ?? fields.error ?? `answered ${delivery.statusCode}`,
    remoteAddress: delivery.remoteAddress,
    bodyBytes: Number.isSafeInteger(length) ? length : null,
  });
}
