import type { FastifyPluginAsync } from 'fastify';
import type { Inbox } from '../inbox.js';
import type { ReadinessReport } from '../observability/readiness.js';

export interface OpsRoutesOptions {
  inbox: Inbox;
  /**
   * true: a failing check's answer carries its error as the check gave it (a driver's message, a
   * host name), for a listener only the platform reaches. false (the default): only which check
   * failed, so a public port tells nothing about the dependencies behind it; the log has the error.
   */
  readinessDetails?: boolean;
}

/** What a failing check says where its error is not shown. */
export const UNDISCLOSED_FAILURE = 'unavailable';

/** Liveness: 200 while the process serves. Probes arrive every few seconds: only warnings are worth a log line. */
export const livenessRoute: FastifyPluginAsync = async (app) => {
  app.get('/healthz', { logLevel: 'warn' }, async () => ({ status: 'ok' }));
};

/**
 * Endpoints for the platform, not for providers: liveness, readiness and Prometheus metrics. The
 * metrics reveal counts, so serve them where only the platform reaches (MANAGEMENT_PORT).
 */
export const opsRoutes: FastifyPluginAsync<OpsRoutesOptions> = async (app, { inbox, readinessDetails = false }) => {
  await app.register(livenessRoute);

  app.get('/readyz', { logLevel: 'warn' }, async (_request, reply) => {
    const report = await inbox.readiness.report();
    const { ready, checks } = readinessDetails ? report : undisclosed(report);
    return reply.code(ready ? 200 : 503).send({ status: ready ? 'ready' : 'not_ready', checks });
  });

  app.get('/metrics', { logLevel: 'warn' }, async (_request, reply) => {
    const { contentType, text } = await inbox.metrics.exposition();
    return reply.header('content-type', contentType).send(text);
  });
};

function undisclosed({ ready, checks }: ReadinessReport): ReadinessReport {
  const named = Object.entries(checks).map(([name, { ok, ms }]) => [name, ok ? { ok, ms } : { ok, ms, error: UNDISCLOSED_FAILURE }] as const);
  return { ready, checks: Object.fromEntries(named) };
}
