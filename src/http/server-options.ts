import { createServer, METHODS, STATUS_CODES, type RequestListener, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyServerOptions } from 'fastify';
import type { HttpSettings } from '../config/settings.js';

/**
 * Node looks for connections past their header or request timeout every `connectionsCheckingInterval`
 * (30 s by default), so a stalled request could outlive its timeout by that much.
 */
const TIMEOUT_CHECK_INTERVAL_MS = 1000;

/**
 * The server side of the HTTP settings, and the server itself: `first` sees each request before
 * fastify's handler and passes on what it does not answer (the webhook deliveries' listener).
 * Providers send small bodies quickly, so a request still incomplete after its timeout is a stalled
 * or hostile client, and holds a connection for nothing. The timeouts bound receiving a request
 * only: the answer may take its time (RECORD_TIMEOUT_MS, inline processing). Fastify's own default
 * turns Node's request timeout off.
 */
export function httpServerOptions(
  settings: HttpSettings,
  first: (fastifyHandler: RequestListener) => RequestListener,
): Pick<FastifyServerOptions, 'requestTimeout' | 'keepAliveTimeout' | 'clientErrorHandler'> & { serverFactory: (handler: RequestListener) => Server } {
  return {
    // Given a server, fastify only reports these two (initialConfig): they are set on the server below.
    requestTimeout: settings.requestTimeoutMs,
    keepAliveTimeout: settings.idleTimeoutMs,
    serverFactory: (handler) => {
      const server = createServer({ headersTimeout: settings.headersTimeoutMs, connectionsCheckingInterval: TIMEOUT_CHECK_INTERVAL_MS }, first(handler));
      server.requestTimeout = settings.requestTimeoutMs;
      server.keepAliveTimeout = settings.idleTimeoutMs;
      return server;
    },
    clientErrorHandler: answerClientError,
  };
}

/**
 * Every method Node's parser takes reaches the router, so a route answers it (the webhooks' 405)
 * instead of the not-found handler; CONNECT, which never reaches it, is answered 405 here.
 */
export function routeEveryMethod(app: FastifyInstance): void {
  for (const method of METHODS) if (method !== 'CONNECT' && !app.supportedMethods.includes(method)) app.addHttpMethod(method, { hasBody: true });
  app.server.on('connect', (_request, socket: Socket) => closeWith(socket, 405, 'method_not_allowed', 'CONNECT is not served here', 'allow: POST\r\n'));
}

const CLIENT_ERRORS: Record<string, [number, string, string]> = {
  ERR_HTTP_REQUEST_TIMEOUT: [408, 'request_timeout', 'the request did not arrive whole within HTTP_REQUEST_TIMEOUT_MS (or its headers within HTTP_HEADERS_TIMEOUT_MS)'],
  HPE_HEADER_OVERFLOW: [431, 'headers_too_large', 'the request headers are larger than the server accepts'],
};

/**
 * What Node's HTTP parser refused (a malformed request, headers past the limit) or timed out,
 * answered with `Connection: close`: the connection carries no further request, and a keep-alive
 * client told so opens a new one instead of having its next request reset.
 */
function answerClientError(this: FastifyInstance, error: Error & { code?: string }, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, message] = CLIENT_ERRORS[error.code ?? ''] ?? [400, 'bad_request', 'the request is not valid HTTP'];
  this.log.debug({ err: error }, `client error: ${code}`);
  closeWith(socket, status, code, message);
}

/** Writes a whole JSON answer, then closes; a client still sending is cut off after a moment. */
function closeWith(socket: Socket, status: number, code: string, message: string, extraHeaders = ''): void {
  const body = JSON.stringify({ error: code, message });
  if (socket.writable) {
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${extraHeaders}connection: close\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  setTimeout(() => socket.destroy(), TIMEOUT_CHECK_INTERVAL_MS).unref();
}
