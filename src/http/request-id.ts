import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';

/** Ids a proxy or a caller may pass on: short, and nothing that could break a log line or a header. */
const SANE_REQUEST_ID = /^[\w.:/+=@-]{1,128}$/;

/** Fastify's genReqId: the caller's X-Request-Id when sane (so logs correlate across hops), else a UUID. */
export function requestId(request: IncomingMessage): string {
  const incoming = request.headers['x-request-id'];
  return typeof incoming === 'string' && SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/** Answers every request with its id, so a provider's or an operator's report can be found in the logs. */
export function echoRequestId(app: FastifyInstance): void {
  app.addHook('onRequest', async (request, reply) => {
    void reply.header('x-request-id', request.id);
  });
}
