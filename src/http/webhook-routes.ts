import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { describeError, InboxError, UnknownProviderError } from '../errors.js';
import type { Inbox } from '../inbox.js';
import { isProviderName, PROVIDER_NAMES } from '../model/delivery.js';
import { errorCode } from './errors.js';

export interface WebhookRoutesOptions {
  inbox: Inbox;
  bodyLimitBytes: number;
}

const OTHER_METHODS = ['GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * POST /webhooks/:provider for every provider, through one pipeline. Bodies reach the verifier as the
 * exact bytes received, whatever their content type; nothing parses them before the signature check.
 */
export const webhookRoutes: FastifyPluginAsync<WebhookRoutesOptions> = async (app, { inbox, bodyLimitBytes }) => {
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: bodyLimitBytes }, (_request, body, done) => done(null, body));

  // One log line per delivery, written when the answer has gone out: what came in, how it was
  // answered and how long it took. Never the body or a signature.
  const answers = new WeakMap<FastifyRequest, { eventId?: string; outcome?: string; error?: string; reason?: string }>();
  app.addHook('onError', async (request, _reply, error) => {
    answers.set(request, { error: errorCode(error), reason: describeError(error) });
    // Refused before the inbox saw it (e.g. too large): counted here, as the inbox could not.
    if (!(error instanceof InboxError) && (error.statusCode ?? 500) < 500) inbox.metrics.deliveryAnswered(providerOf(request), 'bad_request', 0);
  });
  app.addHook('onResponse', async (request, reply) => {
    const fields = { provider: providerOf(request), ...answers.get(request), statusCode: reply.statusCode, ackMs: Math.round(reply.elapsedTime * 100) / 100 };
    if (reply.statusCode === 200) request.log.info(fields, 'delivery acknowledged');
    else request.log[reply.statusCode >= 500 ? 'warn' : 'info'](fields, 'delivery rejected');
  });

  app.post<{ Params: { provider: string } }>('/webhooks/:provider', async (request, reply) => {
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const received = await inbox.verifyAndReceive(request.params.provider, { headers: request.headers, body, receivedAt: inbox.clock.now() });
    answers.set(request, { eventId: received.eventId, outcome: received.outcome });
    return reply.code(200).send({ received: true, ...received });
  });

  app.route<{ Params: { provider: string } }>({
    method: [...OTHER_METHODS],
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
  return (request.params as { provider?: string }).provider ?? '';
}
