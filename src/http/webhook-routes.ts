import type { FastifyPluginAsync } from 'fastify';
import type { Inbox } from '../inbox.js';
import { isProviderName, PROVIDER_NAMES } from '../providers/provider.js';
import { UnknownProviderError } from '../errors.js';

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

  app.post<{ Params: { provider: string } }>('/webhooks/:provider', async (request, reply) => {
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const received = await inbox.verifyAndReceive(request.params.provider, { headers: request.headers, body, receivedAt: inbox.clock.now() });
    request.log.info({ provider: received.provider, eventId: received.eventId, outcome: received.outcome }, 'delivery acknowledged');
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
