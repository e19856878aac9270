import type { FastifyPluginAsync } from 'fastify';
import type { Inbox } from '../inbox.js';

/**
 * Endpoints for the platform, not for providers: liveness, readiness and Prometheus metrics. They
 * reveal counts and dependency errors, so expose them on the internal network only.
 */
export const opsRoutes: FastifyPluginAsync<{ inbox: Inbox }> = async (app, { inbox }) => {
  // Probes and scrapes arrive every few seconds: only warnings are worth a log line.
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));

  app.get('/readyz', { logLevel: 'warn' }, async (_request, reply) => {
    const { ready, checks } = await inbox.readiness.report();
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks });
  });

  app.get('/metrics', { logLevel: 'warn' }, async (_request, reply) => {
    const { contentType, text } = await inbox.metrics.exposition();
    return reply.header('content-type', contentType).send(text);
  });
};
