import type { IncomingHttpHeaders, IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import proxyAddr from '@fastify/proxy-addr';
import { PROVIDER_NAMES, type ProviderName } from '../model/delivery.js';
import { receiveDelivery, refuseBeforeBody, reportAnswered } from './delivery-answer.js';
import { requestId } from './request-id.js';
import { bodyLimitOf, type WebhookRoutesOptions } from './webhook-routes.js';

export interface WebhookListenerOptions extends WebhookRoutesOptions {
  /** The proxies whose X-Forwarded-For is believed (TRUST_PROXY), as fastify is told. */
  trustProxy: string[];
}

/**
 * The service's own server answers a webhook delivery on node:http when nothing but the inbox's
 * verdict can decide it: a POST to exactly `/webhooks/<provider>`, the provider configured (and, for
 * PayU, a media type it posts), the body's length declared and within its limit. Everything else, the
 * webhook requests refused before their body is read included, goes on to fastify, whose webhookRoutes
 * answer them. Both paths share receiveDelivery and reportAnswered, so a delivery gets the same answer,
 * headers and log line either way; what the busiest route is spared is fastify's per-request work.
 */
export class WebhookListener {
  /** Set once the server starts closing: from then on fastify answers, with its 503 while closing. */
  private closing = false;
  private readonly routes = new Map<string, ProviderName>(PROVIDER_NAMES.map((provider) => [`/webhooks/${provider}`, provider]));
  private readonly trusted: ((address: string, hop: number) => boolean) | null;

  constructor(private readonly options: WebhookListenerOptions) {
    this.trusted = options.trustProxy.length > 0 ? proxyAddr.compile(options.trustProxy) : null;
  }

  close(): void {
    this.closing = true;
  }

  /** The server's request listener: webhook deliveries here, the rest to `fallback`. */
  in(fallback: RequestListener): RequestListener {
    return (request, response) => {
      const provider = request.method === 'POST' && !this.closing ? this.routes.get(request.url ?? '') : undefined;
      if (provider === undefined || !this.receivable(provider, request.headers)) {
        fallback(request, response);
        return;
      }
      const started = performance.now();
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      // A client gone before its body ended has no one to answer; the server closes its socket.
      request.on('error', () => undefined);
      request.on('end', () => void this.answer(provider, request, response, Buffer.concat(chunks), started));
    };
  }

  private receivable(provider: ProviderName, headers: IncomingHttpHeaders): boolean {
    const length = Number(headers['content-length']);
    if (headers['transfer-encoding'] !== undefined || !Number.isSafeInteger(length) || length > bodyLimitOf(provider, this.options)) return false;
    try {
      refuseBeforeBody(this.options.inbox, provider, headers);
      return true;
    } catch {
      return false;
    }
  }

  private async answer(provider: ProviderName, request: IncomingMessage, response: ServerResponse, body: Buffer, started: number): Promise<void> {
    const { inbox, onRejected } = this.options;
    const id = requestId(request);
    const logger = inbox.logger.child({ reqId: id });
    const { answer, verdict } = await receiveDelivery(inbox, provider, { headers: request.headers, body }, logger);
    const text = JSON.stringify(answer.body);
    response
      .writeHead(answer.status, { ...answer.headers, 'x-request-id': id, 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) })
      .end(text);
    reportAnswered(logger, onRejected, {
      provider,
      statusCode: answer.status,
      verdict,
      ackMs: performance.now() - started,
      remoteAddress: (this.trusted ? proxyAddr(request, this.trusted) : request.socket.remoteAddress) ?? null,
      declaredLength: request.headers['content-length'],
    });
  }
}
