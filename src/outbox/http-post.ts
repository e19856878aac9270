import { PermanentError, RetryLaterError } from '../errors.js';
import type { Delivered } from './transport.js';

/** Enough of a response body to tell an operator why the downstream refused. */
const RECORDED_BODY_CHARS = 500;

export interface HttpPost {
  url: string;
  headers: Record<string, string>;
  body: string;
  timeoutMs: number;
}

/**
 * POSTs one outbox delivery and turns the answer into the dispatcher's verdict. 2xx is done, and 409
 * means the downstream already did it under this key; 408, 429, 5xx, a timeout and network errors are
 * retried (after Retry-After, when it says); any other answer (4xx, a redirect) fails for good, with
 * the response recorded. A redirect is not followed: a redirected POST may turn into a GET elsewhere,
 * so the final URL belongs in the configuration.
 */
export async function postDelivery(request: HttpPost): Promise<Delivered> {
  let response: Response;
  let body: string;
  try {
    response = await fetch(request.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...request.headers },
      body: request.body,
      redirect: 'manual',
      signal: AbortSignal.timeout(request.timeoutMs),
    });
    body = (await response.text()).slice(0, RECORDED_BODY_CHARS);
  } catch (error) {
    if (error instanceof DOMException && error.name === 'TimeoutError') throw new Error(`no answer within ${request.timeoutMs} ms`);
    throw error;
  }

  // A success is recorded by its status alone: the body may echo the customer's details.
  if (response.ok) return { status: 'sent', outcome: `HTTP ${response.status}` };
  if (response.status === 409) return { status: 'sent', outcome: 'already done: HTTP 409' };
  const answer = `HTTP ${response.status}${body ? `: ${body}` : ''}`;
  if (response.status === 408 || response.status === 429 || response.status >= 500) {
    throw new RetryLaterError(answer, retryAfterMs(response.headers.get('retry-after')));
  }
  if (response.status >= 300 && response.status < 400) throw new PermanentError(`${answer} (redirects are not followed: configure the final URL)`);
  throw new PermanentError(answer);
}

/** Retry-After in seconds (the form rate limiters send); anything else leaves the delay to backoff. */
function retryAfterMs(header: string | null): number | undefined {
  return header !== null && /^\d+$/.test(header.trim()) ? Number(header.trim()) * 1000 : undefined;
}
