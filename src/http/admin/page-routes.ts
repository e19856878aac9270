import type { FastifyError, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { authorize } from '../../admin/access.js';
import type { AdminDashboard } from '../../admin/dashboard.js';
import { parseEventFilter } from '../../admin/event-list.js';
import { oneOf, rowId, text, type Query } from '../../admin/input.js';
import { parsePaymentFilter } from '../../admin/payment-list.js';
import { paymentDetailView } from '../../admin/payment-view.js';
import { InboxError } from '../../errors.js';
import { PROVIDER_NAMES } from '../../model/delivery.js';
import { OperationError } from '../../ops/errors.js';
import { headerValue } from '../../providers/headers.js';
import { csrfOf, SESSION_COOKIE } from './session.js';
import { actorOf, BULK_JOBS_SHOWN, bodyOf, bulkFilterOf, flag, OUTBOX_STATUSES, reconcileRunPage } from './api-routes.js';
import { reasonOf } from '../../admin/actions.js';
import { auditPage } from './audit-page.js';
import { bulkConfirmPage, bulkJobPage } from './bulk-replay-pages.js';
import { errorPage } from './error-page.js';
import { eventPage, eventsPage } from './event-pages.js';
import { outboxPage } from './outbox-page.js';
import { overviewPage } from './overview-page.js';
import type { PageContext } from './page-context.js';
import { paymentPage, paymentsPage } from './payment-pages.js';
import { problemsPage } from './problems-page.js';
import { reconcilePage } from './reconcile-page.js';
import { rejectionsPage } from './rejections-page.js';
import { signInPage } from './sign-in-page.js';

const HTML = 'text/html; charset=utf-8';

/** The server-rendered screens: forms post here, and every answer is a page (or a redirect to one). */
export const pageRoutes: FastifyPluginAsync<{ dashboard: AdminDashboard; secret: string }> = async (app, { dashboard, secret }) => {
  const { reads, clock, access, actions, sessions } = dashboard;
  const context = (request: FastifyRequest): PageContext => ({
    actor: actorOf(request),
    csrf: csrfOf(request, actorOf(request), secret),
    outboxKinds: dashboard.inbox.domains.outboxKinds,
  });
  const send = (reply: FastifyReply, page: string, status = 200) => reply.code(status).type(HTML).send(page);

  app.setErrorHandler<FastifyError | InboxError>((error, request, reply) => {
    const status = error.statusCode ?? 500;
    if (status >= 500) request.log.error({ err: error }, 'admin page failed');
    const message = status >= 500 ? 'internal error (logged)' : error.message;
    return send(reply, errorPage(request.adminActor ? context(request) : null, status, message), status);
  });

  app.get('/admin/sign-in', async (_request, reply) => send(reply, signInPage(null)));

  app.post('/admin/sign-in', async (request, reply) => {
    const origin = headerValue(request.headers, 'origin');
    if (origin !== undefined && origin !== 'null' && origin !== `${request.protocol}://${request.host}`) {
      request.log.warn({ clientAddress: request.ip, via: 'form', reason: 'foreign_origin' }, 'admin sign-in refused');
      return send(reply, signInPage('Refused: sign in from this dashboard.'), 403);
    }
    const token = bodyOf(request).token;
    const { actor, retryAfterSeconds } = await dashboard.signIn.attempt(typeof token === 'string' ? token.trim() : '', { address: request.ip, via: 'form', log: request.log });
    if (retryAfterSeconds !== undefined) {
      const minutes = Math.ceil(retryAfterSeconds / 60);
      void reply.header('retry-after', String(retryAfterSeconds));
      return send(reply, signInPage(`Too many refused tokens from your address: try again in ${minutes} minute${minutes === 1 ? '' : 's'}.`), 429);
    }
    if (!actor) return send(reply, signInPage('That token is not one of ADMIN_TOKENS.'), 401);
    void reply.setCookie(SESSION_COOKIE, await sessions.start(actor.name), {
      signed: true,
      httpOnly: true,
      sameSite: 'strict',
      secure: request.protocol === 'https',
      path: '/admin',
      maxAge: Math.floor(access.settings.sessionTtlMs / 1000),
    });
    return reply.redirect('/admin', 303);
  });

  app.post('/admin/sign-out', async (request, reply) => {
    // The row goes: the cookie is refused by every process from now on, wherever it was copied.
    if (request.adminSessionId !== undefined) await sessions.end(request.adminSessionId);
    return reply.clearCookie(SESSION_COOKIE, { path: '/admin' }).redirect('/admin/sign-in', 303);
  });

  app.get('/admin', async (request, reply) => {
    const period = oneOf(request.query as Query, 'period', ['hour', 'day'] as const) ?? 'hour';
    return send(reply, overviewPage(context(request), await reads.overview(period)));
  });

  app.get('/admin/events', async (request, reply) => {
    const query = request.query as Record<string, string>;
    const filter = parseEventFilter(query, clock.now());
    const { cursor: _cursor, ...shown } = query;
    return send(reply, eventsPage(context(request), shown, filter, await reads.events(filter)));
  });

  const showEvent = async (request: FastifyRequest, reply: FastifyReply, id: number, dryRun: Parameters<typeof eventPage>[2], message: string | null) => {
    const view = await reads.event(id);
    if (!view) return send(reply, errorPage(context(request), 404, `No event with id ${id}.`), 404);
    return send(reply, eventPage(context(request), view, dryRun, message));
  };

  app.get('/admin/events/:id', async (request, reply) => {
    const query = request.query as Query;
    return showEvent(request, reply, rowId((request.params as { id: string }).id), null, text(query, 'message') ?? null);
  });

  app.post('/admin/events/:id/replay', async (request, reply) => {
    const id = rowId((request.params as { id: string }).id);
    const body = bodyOf(request);
    const dryRun = flag(body.dryRun, 'dryRun');
    authorize(actorOf(request), dryRun ? 'replay_dry_run' : 'replay');
    if (!(await reads.eventExists(id))) return send(reply, errorPage(context(request), 404, `No event with id ${id}.`), 404);
    if (dryRun) return showEvent(request, reply, id, await actions.replay(actorOf(request), id, true, undefined), null);
    const item = await actions.replay(actorOf(request), id, false, reasonOf(body.reason));
    const message = `Replayed: ${item.result}${item.detail ? ` (${item.detail})` : ''}`;
    return reply.redirect(`/admin/events/${id}?${new URLSearchParams({ message }).toString()}`, 303);
  });

  app.get('/admin/payments', async (request, reply) => {
    const query = request.query as Record<string, string>;
    const filter = parsePaymentFilter(query, clock.now());
    const { cursor: _cursor, ...shown } = query;
    return send(reply, paymentsPage(context(request), shown, filter, await reads.payments(filter)));
  });

  app.get('/admin/payments/:provider/:paymentId', async (request, reply) => {
    const params = request.params as Query;
    try {
      const detail = await reads.payment(oneOf(params, 'provider', PROVIDER_NAMES)!, text(params, 'paymentId')!);
      return send(reply, paymentPage(context(request), paymentDetailView(detail)));
    } catch (error) {
      if (error instanceof OperationError) return send(reply, errorPage(context(request), 404, error.message), 404);
      throw error;
    }
  });

  app.get('/admin/problems', async (request, reply) => send(reply, problemsPage(context(request), await reads.stuck(), await actions.bulkJobs.recent(BULK_JOBS_SHOWN))));

  const bulkFields = (body: Query) => Object.fromEntries(['status', 'provider', 'type', 'from', 'to'].map((name) => [name, typeof body[name] === 'string' ? body[name] : '']));

  app.post('/admin/bulk-replay/count', async (request, reply) => {
    authorize(actorOf(request), 'bulk_replay_count');
    const fields = bulkFields(bodyOf(request));
    const ids = await actions.bulkIds(bulkFilterOf(fields, clock.now()));
    return send(reply, bulkConfirmPage(context(request), fields, ids.length));
  });

  app.post('/admin/bulk-replay', async (request, reply) => {
    authorize(actorOf(request), 'bulk_replay_start');
    const body = bodyOf(request);
    const expected = Number(text(body, 'expectedCount', 12));
    const job = await actions.startBulkReplay(actorOf(request), bulkFilterOf(bulkFields(body), clock.now()), reasonOf(body.reason), expected);
    return reply.redirect(`/admin/bulk-replay/${job.id}`, 303);
  });

  app.get('/admin/bulk-replay/:id', async (request, reply) => {
    const job = await actions.job((request.params as { id: string }).id);
    return job ? send(reply, bulkJobPage(context(request), job)) : send(reply, errorPage(context(request), 404, 'No such bulk replay.'), 404);
  });

  app.post('/admin/bulk-replay/:id/cancel', async (request, reply) => {
    authorize(actorOf(request), 'bulk_replay_cancel');
    const id = (request.params as { id: string }).id;
    await actions.cancel(actorOf(request), id);
    return reply.redirect(`/admin/bulk-replay/${encodeURIComponent(id)}`, 303);
  });

  app.get('/admin/outbox', async (request, reply) => {
    const query = request.query as Query;
    const status = oneOf(query, 'status', OUTBOX_STATUSES);
    return send(reply, outboxPage(context(request), status, await reads.outboxRows({ status, limit: 100 }), text(query, 'message') ?? null));
  });

  app.post('/admin/outbox/:id/retry', async (request, reply) => {
    authorize(actorOf(request), 'outbox_retry');
    const id = rowId((request.params as { id: string }).id);
    const reset = await actions.retryOutbox(actorOf(request), id, reasonOf(bodyOf(request).reason));
    const message = reset === 1 ? `Outbox row ${id} is due again.` : `Outbox row ${id} was not failed or skipped; nothing changed.`;
    return reply.redirect(`/admin/outbox?${new URLSearchParams({ message }).toString()}`, 303);
  });

  app.get('/admin/rejections', async (request, reply) => {
    return send(reply, rejectionsPage(context(request), await reads.rejections(200)));
  });

  app.get('/admin/reconcile', async (request, reply) => {
    const query = request.query as Query;
    const page = await reconcileRunPage(dashboard, query);
    const next = page.nextCursor ? `/admin/reconcile?${new URLSearchParams({ ...(page.provider ? { provider: page.provider } : {}), cursor: page.nextCursor }).toString()}` : null;
    return send(reply, reconcilePage(context(request), page.runs, page.provider, next));
  });

  app.get('/admin/audit', async (request, reply) => send(reply, auditPage(context(request), await reads.auditEntries(200))));
};
