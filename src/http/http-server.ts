import type { RequestListener } from 'node:http';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/settings.js';
import { adminSecurityHeaders } from './admin/security-headers.js';
import { installErrorHandling } from './errors.js';
import { echoRequestId, requestId } from './request-id.js';
import { httpServerOptions, routeEveryMethod } from './server-options.js';

/**
 * A fastify server as each of the service's listeners is built, before its routes: the same logger,
 * limits, timeouts, proxies, error answers and request ids on the webhook port and the management
 * port alike. `first` sees each request before fastify does (the webhook deliveries' listener).
 */
export function httpServer(config: Config, logger: Logger, first: (fastifyHandler: RequestListener) => RequestListener = (handler) => handler): FastifyInstance {
  const app = Fastify({
    // Typed as fastify's own logger, so the instance's type is the plain FastifyInstance that routes expect.
    // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion -- it changes the inferred instance type
    loggerInstance: logger as FastifyBaseLogger,
    bodyLimit: config.bodyLimitBytes,
    genReqId: requestId,
    // The webhook routes log each delivery once, with its outcome; probes are not worth a line.
    logController: new LogController({ disableRequestLogging: true }),
    ...httpServerOptions(config.http, first),
    // Only these proxies' X-Forwarded-For and -Proto are believed (the client's address, https).
    trustProxy: config.trustProxy.length > 0 ? config.trustProxy : false,
  });
  routeEveryMethod(app);
  installErrorHandling(app);
  echoRequestId(app);
  adminSecurityHeaders(app);
  return app;
}
