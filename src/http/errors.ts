import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { InboxError } from '../errors.js';
import { inboxErrorAnswer } from './delivery-answer.js';

interface ErrorBody {
  error: string;
  message: string;
}

/**
 * The one place errors become HTTP answers. Expected rejections (bad signature, bad body) are 4xx with
 * a stable code; an unreachable database is a 503 the provider will retry; anything else is a 500 and
 * is logged with its stack.
 */
export function installErrorHandling(app: FastifyInstance): void {
  app.setErrorHandler<FastifyError | InboxError>(jsonErrorHandler('internal error; the delivery was not acknowledged'));
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ error: 'not_found', message: `no route for ${request.method} ${request.url.split('?')[0]}` } satisfies ErrorBody),
  );
}

/**
 * Errors as JSON answers: an InboxError with its status and code, another 4xx as `errorCode` names it,
 * anything else a 500 that says `internalMessage` (in the words of the routes it serves) and is logged.
 */
export function jsonErrorHandler(internalMessage: string): (error: FastifyError | InboxError, request: FastifyRequest, reply: FastifyReply) => FastifyReply {
  return (error: FastifyError | InboxError, request: FastifyRequest, reply: FastifyReply) => {
    // Refused deliveries are logged once, with their outcome and timing, by the webhook routes.
    if (error instanceof InboxError) {
      const answer = inboxErrorAnswer(error);
      return reply.code(answer.status).headers(answer.headers).send(answer.body);
    }
    const status = error.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      request.log.debug({ code: error.code }, `request rejected: ${error.message}`);
      return reply.code(status).send({ error: errorCode(error), message: error.message } satisfies ErrorBody);
    }
    request.log.error({ err: error }, 'unexpected error');
    return reply.code(500).send({ error: 'internal_error', message: internalMessage } satisfies ErrorBody);
  };
}

/** The `error` code a response carries for this error. */
export function errorCode(error: FastifyError | InboxError): string {
  if (error instanceof InboxError) return error.code;
  if ((error.statusCode ?? 500) >= 500) return 'internal_error';
  switch (error.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return 'payload_too_large';
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return 'unsupported_media_type';
    default:
      return 'bad_request';
  }
}
