import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { DEFAULT_PAYU_BODY_LIMIT_BYTES } from '../config/load.js';
import { describeError, InboxError, UnknownProviderError } from '../errors.js';
import type { Inbox } from '../inbox.js';
import { deliveryResult } from '../observability/metrics.js';
import { isProviderName, PROVIDER_NAMES, type ProviderName } from '../model/delivery.js';
import { receiveDelivery, refuseBeforeBody, reportAnswered, type DeliveryVerdict, type RejectedDelivery } from './delivery-answer.js';
import { errorCode } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The provider a webhook route receives for. */
    provider?: ProviderName;
  }
}

export interface WebhookRoutesOptions {
  inbox: Inbox;
  /** Told of every refused delivery, after its answer went out; must not do I/O on the spot. */
  onRejected?: (rejection: RejectedDelivery) => void;
  /** Largest Stripe or Razorpay body, in bytes; 413 beyond. */
  bodyLimitBytes: number;
  /** Largest PayU body (DEFAULT_PAYU_BODY_LIMIT_BYTES unless given); 413 beyond. */
  payuBodyLimitBytes?: number;
}

/**
 * A refused upload whose declared length is at most this is read to its end (and thrown away) before
 * the connection goes on, so the client gets its 413 instead of a reset while it is still sending; a
 * longer one is cut off (the request timeout bounds a body of unknown length).
 */
const DRAINED_BODY_BYTES = 8 * 1024 * 1024;

/** The largest body a delivery to `provider` may have; 413 beyond. */
export function bodyLimitOf(provider: ProviderName, limits: Pick<WebhookRoutesOptions, 'bodyLimitBytes' | 'payuBodyLimitBytes'>): number {
  return provider === 'payu' ? (limits.payuBodyLimitBytes ?? DEFAULT_PAYU_BODY_LIMIT_BYTES) : limits.bodyLimitBytes;
}

/**
 * POST /webhooks/:provider for every provider, through one pipeline. Bodies reach the verifier as the
 * exact bytes received, whatever their content type; nothing parses them before the signature check
 * (PayU's, which is computed over its fields, excepted). What can be refused without the body is
 * refused before it is read: an unknown provider (404), one not configured (503), a PayU media type
 * it never posts (415). Any other method is a 405.
 */
export const webhookRoutes: FastifyPluginAsync<WebhookRoutesOptions> = async (app, options) => {
  const { inbox, bodyLimitBytes, onRejected } = options;
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: bodyLimitBytes }, (_request, body, done) => done(null, body));
  readAnyMediaType(app);

  // One log line per delivery once its answer has gone out (reportAnswered).
  const verdicts = new WeakMap<FastifyRequest, DeliveryVerdict>();
  app.addHook('onError', async (request, _reply, error) => {
    verdicts.set(request, { error: errorCode(error), reason: describeError(error) });
    // Refused before the inbox saw it (e.g. too large): counted here, as the inbox could not.
    if (!(error instanceof InboxError) && (error.statusCode ?? 500) < 500) inbox.metrics.deliveryAnswered(providerOf(request), 'bad_request', 0);
  });
  app.addHook('onResponse', async (request, reply) => {
    reportAnswered(request.log, onRejected, {
      provider: providerOf(request),
      statusCode: reply.statusCode,
      verdict: verdicts.get(request),
      ackMs: reply.elapsedTime,
      remoteAddress: request.ip ?? null,
      declaredLength: request.headers['content-length'],
    });
  });
  app.addHook('onSend', (request, reply, payload, done) => {
    if (reply.statusCode === 413 && Number(request.headers['content-length'] ?? 0) <= DRAINED_BODY_BYTES) reply.removeHeader('connection');
    done(null, payload);
  });

  /** Refused before its body was read: counted here, as the inbox never sees it. */
  const refuse = (provider: string, error: InboxError): never => {
    inbox.metrics.deliveryAnswered(provider, deliveryResult(error), 0);
    throw error;
  };

  async function receive(request: FastifyRequest, reply: FastifyReply) {
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const { answer, verdict } = await receiveDelivery(inbox, providerOf(request), { headers: request.headers, body }, request.log);
    verdicts.set(request, verdict);
    return reply.code(answer.status).headers(answer.headers).send(answer.body);
  }

  for (const provider of PROVIDER_NAMES) {
    app.post(`/webhooks/${provider}`, {
      bodyLimit: bodyLimitOf(provider, options),
      config: { provider },
      onRequest: async (request) => {
        try {
          refuseBeforeBody(inbox, provider, request.headers);
        } catch (error) {
          if (error instanceof InboxError) refuse(provider, error);
          throw error;
        }
      },
      handler: receive,
    });
  }
  // Any other name: refused before its body is read, so the handler never runs.
  app.post<{ Params: { provider: string } }>('/webhooks/:provider', {
    onRequest: async (request) => refuse(request.params.provider, new UnknownProviderError(request.params.provider)),
    handler: receive,
  });

  app.route<{ Params: { provider: string } }>({
    method: app.supportedMethods.filter((method) => method !== 'POST' && method !== 'HEAD'),
    url: '/webhooks/:provider',
    handler: async (request, reply) => {
      if (!isProviderName(request.params.provider)) throw new UnknownProviderError(request.params.provider);
      return reply
        .code(405)
        .header('allow', 'POST')
        .send({ error: 'method_not_allowed', message: `use POST /webhooks/${request.params.provider} (providers: ${PROVIDER_NAMES.join(', ')})` });
    },
  });
};

function providerOf(request: FastifyRequest): string {
  return request.routeOptions.config.provider ?? (request.params as { provider?: string }).provider ?? '';
}

/**
 * Fastify answers 415 to a Content-Type it cannot parse (`a/b/c`, `;;;`, empty) before any route
 * sees the body. The webhooks read the raw bytes whatever the content type, so the header is set
 * aside while the body is read and put back before the handler: the verifier, and the headers
 * stored with the event, see it as sent. (PayU's media type is checked before, in onRequest.)
 */
function readAnyMediaType(app: FastifyInstance): void {
  const setAside = new WeakMap<FastifyRequest, string>();
  app.addHook('preParsing', (request, _reply, payload, done) => {
    const contentType = request.headers['content-type'];
    if (contentType !== undefined && !COMMON_MEDIA_TYPES.has(contentType)) {
      setAside.set(request, contentType);
      request.headers['content-type'] = 'application/octet-stream';
    }
    done(null, payload);
  });
  app.addHook('preValidation', (request, _reply, done) => {
    const contentType = setAside.get(request);
    if (contentType !== undefined) request.headers['content-type'] = contentType;
    done();
  });
}

/** What providers send, which fastify parses as it is: left alone. */
const COMMON_MEDIA_TYPES = new Set(['application/json', 'application/json; charset=utf-8', 'application/x-www-form-urlencoded']);
