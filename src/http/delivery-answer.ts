import type { IncomingHttpHeaders } from 'node:http';
import { InboxError } from '../errors.js';
import type { Inbox } from '../inbox.js';

/** An HTTP answer in no framework's terms: what to send back to the provider. */
export interface DeliveryAnswer {
  status: number;
  headers: Record<string, string>;
  body: Record<string, unknown>;
}

/**
 * The answer to an error the inbox raised: its status and stable code (the README's table). A 503
 * asks the provider to come back (Retry-After), as it will anyway.
 */
export function inboxErrorAnswer(error: InboxError): DeliveryAnswer {
  return { status: error.statusCode, headers: error.statusCode === 503 ? { 'retry-after': '5' } : {}, body: { error: error.code, message: error.message } };
}

/**
 * Receives one delivery for a server that is not fastify (Express, Koa, node:http): give it the raw
 * body, exactly the bytes received (Express: `express.raw({ type: () => true })`), and send back what
 * it answers. Never throws: an unexpected error is logged and answered 500, so the provider retries.
 */
export async function answerDelivery(inbox: Inbox, provider: string, delivery: { headers: IncomingHttpHeaders; body: Buffer }): Promise<DeliveryAnswer> {
  try {
    const received = await inbox.verifyAndReceive(provider, { headers: delivery.headers, body: delivery.body, receivedAt: inbox.clock.now() });
    return { status: 200, headers: {}, body: { received: true, ...received } };
  } catch (error) {
    if (error instanceof InboxError) return inboxErrorAnswer(error);
    inbox.logger.error({ err: error, provider }, 'unexpected error');
    return { status: 500, headers: {}, body: { error: 'internal_error', message: 'internal error; the delivery was not acknowledged' } };
  }
}
