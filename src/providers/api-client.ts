import { BadRequestError } from '../errors.js';
import { isRecord } from '../model/json.js';

/**
 * Calls to a provider's API, as reconciliation makes them: bounded in time and size, polite (a 429's
 * Retry-After is waited out, a 5xx or a timeout backs off exponentially up to a cap), and answering
 * only a JSON object. Credentials travel in headers or the form body, never in the URL, so no message
 * here (which names the URL) can carry one.
 */

export interface ApiClientOptions {
  /** One request, from sending to the end of the body. */
  timeoutMs: number;
  /** A body larger than this is refused (an API gone wrong must not fill the memory). */
  maxBytes: number;
  /** Attempts of one request, the first included. */
  maxAttempts: number;
  /** The first backoff after a 5xx or a timeout; doubled after each. */
  backoffBaseMs: number;
  /** No wait (backoff or Retry-After) is longer than this. */
  backoffCapMs: number;
}

export const DEFAULT_API_CLIENT_OPTIONS: ApiClientOptions = { timeoutMs: 30_000, maxBytes: 16 * 1024 * 1024, maxAttempts: 6, backoffBaseMs: 1000, backoffCapMs: 60_000 };

/** A provider's API could not give an answer: the message says which call and why (never a credential). */
export class ProviderApiError extends Error {
  constructor(
    readonly provider: string,
    message: string,
  ) {
    super(`${provider} API: ${message}`);
    this.name = 'ProviderApiError';
  }
}

export interface ApiRequest {
  method: 'GET' | 'POST';
  url: URL;
  headers: Record<string, string>;
  body?: string;
}

/** Why an attempt failed, and whether (and after how long at least) it may be tried again. */
interface Failure {
  reason: string;
  retryAfterMs: number | null;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** The request's answer as a JSON object, after the retries the options allow. */
export async function requestJson(provider: string, request: ApiRequest, options: ApiClientOptions): Promise<Record<string, unknown>> {
  const what = `${request.method} ${request.url.origin}${request.url.pathname}`;
  for (let attempt = 1; ; attempt++) {
    const result = await attemptRequest(request, options);
    if (!('reason' in result)) return result.json;
    if (result.retryAfterMs === null || attempt >= options.maxAttempts) {
      throw new ProviderApiError(provider, `${what}: ${result.reason}${attempt > 1 ? ` (after ${attempt} attempts)` : ''}`);
    }
    const backoff = Math.max(result.retryAfterMs, options.backoffBaseMs * 2 ** (attempt - 1));
    await sleep(Math.min(backoff, options.backoffCapMs));
  }
}

async function attemptRequest(request: ApiRequest, options: ApiClientOptions): Promise<{ json: Record<string, unknown> } | Failure> {
  const signal = AbortSignal.timeout(options.timeoutMs);
  let response: Response;
  try {
    response = await fetch(request.url, { method: request.method, headers: request.headers, body: request.body, signal, redirect: 'error' });
  } catch (error) {
    return { reason: `no answer (${describeFetchError(error)})`, retryAfterMs: 0 };
  }
  let text: string;
  try {
    text = await boundedText(response, options.maxBytes);
  } catch (error) {
    if (error instanceof TooLargeError) return { reason: error.message, retryAfterMs: null };
    return { reason: `the answer was cut off (${describeFetchError(error)})`, retryAfterMs: 0 };
  }
  if (response.status === 429) return { reason: 'rate limited (429)', retryAfterMs: retryAfterMs(response.headers.get('retry-after')) };
  if (response.status >= 500) return { reason: `answered ${response.status}`, retryAfterMs: 0 };
  if (response.status < 200 || response.status >= 300) {
    const hint = response.status === 401 || response.status === 403 ? '; check the API key' : '';
    return { reason: `answered ${response.status}${hint}: ${excerpt(text)}`, retryAfterMs: null };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { reason: `the answer is not JSON: ${excerpt(text)}`, retryAfterMs: null };
  }
  if (!isRecord(json)) return { reason: 'the answer is not a JSON object', retryAfterMs: null };
  return { json };
}

class TooLargeError extends Error {}

/** The body as text, refused once it passes `maxBytes`. */
async function boundedText(response: Response, maxBytes: number): Promise<string> {
  const declared = Number(response.headers.get('content-length'));
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel();
    throw new TooLargeError(`the answer is larger than ${maxBytes} bytes`);
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (response.body) {
    for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
      size += chunk.byteLength;
      if (size > maxBytes) {
        // Leaving the loop cancels the stream.
        throw new TooLargeError(`the answer is larger than ${maxBytes} bytes`);
      }
      chunks.push(chunk);
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The items of a listing read one by one: one that a delivery could not be (`read` throws a
 * BadRequestError) is a problem of the page, named with `what`, and the others go on.
 */
export function readItems<Item, T>(items: Item[], read: (item: Item) => T, what: string): { items: T[]; problems: string[] } {
  const usable: T[] = [];
  const problems: string[] = [];
  for (const item of items) {
    try {
      usable.push(read(item));
    } catch (error) {
      if (!(error instanceof BadRequestError)) throw error;
      problems.push(`${what}: ${error.message}`);
    }
  }
  return { items: usable, problems };
}

/**
 * An answer is trusted no further than its question: an item created outside the window asked for
 * (`from` to `to`, Unix seconds) is refused as a problem of the page, not recorded. An API with a
 * fault, or someone between it and us, could send any.
 */
export function createdWithin(what: string, created: unknown, window: { from: number; to: number }): void {
  if (typeof created === 'number' && created >= window.from && created <= window.to) return;
  const when = typeof created === 'number' && Math.abs(created) < 1e11 ? `at ${new Date(created * 1000).toISOString()}` : 'at no readable time';
  throw new BadRequestError(`${what} was created ${when}, outside the window asked for: not recorded`);
}

/** Retry-After in seconds or as an HTTP date; an unreadable one waits like a 5xx. */
export function retryAfterMs(header: string | null, now = Date.now()): number {
  if (header === null) return 0;
  if (/^\d{1,9}$/.test(header.trim())) return Number(header.trim()) * 1000;
  const date = Date.parse(header);
  return Number.isNaN(date) ? 0 : Math.max(0, date - now);
}

/** A provider's answer is shown cut short and on one line: it is text from outside. */
function excerpt(text: string): string {
  // eslint-disable-next-line no-control-regex -- control characters are exactly what it removes
  const line = text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line || '(empty)';
}

function describeFetchError(error: unknown): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return 'timed out';
  const cause = error instanceof Error && error.cause instanceof Error ? `: ${error.cause.message}` : '';
  return error instanceof Error ? `${error.message}${cause}` : String(error);
}
