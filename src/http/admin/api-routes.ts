import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { authorize, type Actor } from '../../admin/access.js';
import { reasonOf, type BulkFilter } from '../../admin/actions.js';
import type { AdminDashboard } from '../../admin/dashboard.js';
import { decodeCursor, encodeCursor, parseEventFilter } from '../../admin/event-list.js';
import { AdminInputError, integer, oneOf, rowId, text, type Query } from '../../admin/input.js';
import { parsePaymentFilter } from '../../admin/payment-list.js';
import { paymentDetailView } from '../../admin/payment-view.js';
import { toDbTime, type OutboxStatus } from '../../db/schema.js';
import { PROVIDER_NAMES } from '../../model/delivery.js';
import { OperationError } from '../../ops/errors.js';

export const OUTBOX_STATUSES: readonly OutboxStatus[] = ['pending', 'sending', 'sent', 'failed', 'skipped'];
/** Bulk replays listed on the failed-and-stuck screen and by GET /admin/api/bulk-replays. */
export const BULK_JOBS_SHOWN = 20;
const RECONCILE_PAGE = { min: 1, max: 200, fallback: 50 };

/** One page of reconcile runs, newest first, from `provider`, `limit` and `cursor` (the API's and the page's). */
export async function reconcileRunPage(dashboard: AdminDashboard, query: Query) {
  const provider = oneOf(query, 'provider', PROVIDER_NAMES);
  const limit = integer(query, 'limit', RECONCILE_PAGE);
  const cursor = text(query, 'cursor', 300);
  const rows = await dashboard.reads.reconcileRuns(limit + 1, provider, cursor === undefined ? undefined : decodeCursor(cursor));
  const runs = rows.slice(0, limit);
  const last = runs.at(-1);
  return { provider, runs, nextCursor: rows.length > limit && last ? encodeCursor(toDbTime(last.startedAt), last.id) : null };
}

const tag = (summary: string, extra: Record<string, unknown> = {}) => ({ schema: { tags: ['admin'], summary, ...extra } });
const stringProps = (...names: string[]) => ({ type: 'object', properties: Object.fromEntries(names.map((name) => [name, { type: 'string' }])) });

export function actorOf(request: FastifyRequest): Actor {
  return request.adminActor!;
}

export function bodyOf(request: FastifyRequest): Query {
  const body = request.body;
  return body && typeof body === 'object' && !Array.isArray(body) ? (body as Query) : {};
}

/** `dryRun` as JSON true/false or a form's "true"/"1"/"on". */
export function flag(value: unknown, name: string): boolean {
  if (value === undefined || value === null || value === '') return false;
  if (typeof value === 'boolean') return value;
  if (value === 'true' || value === '1' || value === 'on') return true;
  if (value === 'false' || value === '0') return false;
  throw new AdminInputError(name, 'must be true or false');
}

/** The filter of a bulk replay: the list's filters, with status failed or processed required. */
export function bulkFilterOf(query: Query, now: Date): BulkFilter {
  const { status, provider, type, paymentId, from, to } = parseEventFilter({ ...query, limit: undefined, cursor: undefined, q: undefined }, now);
  if (status !== 'failed' && status !== 'processed') throw new AdminInputError('status', 'a bulk replay needs status failed or processed');
  return { status, provider, type, paymentId, from, to };
}

/** The JSON API the pages are built on; documented at /admin/api/openapi.json. */
export const apiRoutes: FastifyPluginAsync<{ dashboard: AdminDashboard }> = async (app, { dashboard }) => {
  const { reads, clock, actions } = dashboard;

  app.get(
    '/admin/api/events',
    tag('Events, newest first, by keyset; email: those of the payments with that payer e-mail', {
      querystring: stringProps('provider', 'status', 'type', 'paymentId', 'eventId', 'email', 'from', 'to', 'q', 'limit', 'cursor'),
    }),
    async (request) => reads.events(parseEventFilter(request.query as Query, clock.now())),
  );

  app.get('/admin/api/events/:id', tag('One event: payload, headers (no signature), timeline, payment, outbox'), async (request, reply) => {
    const id = rowId((request.params as { id: string }).id);
    const view = await reads.event(id);
    return view ?? reply.code(404).send({ error: 'not_found', message: `no event with id ${id}` });
  });

  app.post('/admin/api/events/:id/replay', tag('Replay one event (dryRun first: the payment change it would cause)'), async (request, reply) => {
    const id = rowId((request.params as { id: string }).id);
    const body = bodyOf(request);
    const dryRun = flag(body.dryRun, 'dryRun');
    authorize(actorOf(request), dryRun ? 'replay_dry_run' : 'replay');
    if (!(await reads.eventExists(id))) return reply.code(404).send({ error: 'not_found', message: `no event with id ${id}` });
    return actions.replay(actorOf(request), id, dryRun, dryRun ? undefined : reasonOf(body.reason));
  });

  app.get(
    '/admin/api/payments',
    tag(
      "Payments, newest first by last update, by keyset; email: the payer's e-mail exactly, at any time; q: exactly the e-mail or a metadata value, within from and to (default the last 30 days, at most 90)",
      {
        querystring: stringProps('provider', 'status', 'email', 'from', 'to', 'q', 'limit', 'cursor'),
      },
    ),
    async (request) => reads.payments(parsePaymentFilter(request.query as Query, clock.now())),
  );

  app.get('/admin/api/payments/:provider/:paymentId', tag('One payment: its events in order, state, order, enrollments, outbox'), async (request, reply) => {
    const params = request.params as { provider: string; paymentId: string };
    const provider = oneOf(params, 'provider', PROVIDER_NAMES)!;
    const paymentId = text(params, 'paymentId')!;
    try {
      return paymentDetailView(await reads.payment(provider, paymentId));
    } catch (error) {
      if (error instanceof OperationError) return reply.code(404).send({ error: 'not_found', message: error.message });
      throw error;
    }
  });

  app.get('/admin/api/overview', tag('Deliveries, ack latency, backlog, failed, stuck, outbox; hour or day', { querystring: stringProps('period') }), async (request) =>
    reads.overview(oneOf(request.query as Query, 'period', ['hour', 'day'] as const) ?? 'hour'),
  );

  app.get('/admin/api/stuck', tag('Failed and stuck events and outbox rows'), async () => reads.stuck());

  app.get('/admin/api/outbox', tag('Outbox rows by status, newest first', { querystring: stringProps('status', 'limit') }), async (request) => {
    const query = request.query as Query;
    return { rows: await reads.outboxRows({ status: oneOf(query, 'status', OUTBOX_STATUSES), limit: integer(query, 'limit', { min: 1, max: 200, fallback: 50 }) }) };
  });

  app.post('/admin/api/outbox/:id/retry', tag('Send a failed or skipped outbox row again'), async (request, reply) => {
    authorize(actorOf(request), 'outbox_retry');
    const id = rowId((request.params as { id: string }).id);
    const reason = reasonOf(bodyOf(request).reason);
    if (!(await reads.outboxRow(id))) return reply.code(404).send({ error: 'not_found', message: `no outbox row ${id}` });
    const reset = await actions.retryOutbox(actorOf(request), id, reason);
    if (reset === 0) return reply.code(409).send({ error: 'not_retryable', message: 'only failed or skipped rows can be retried' });
    return { retried: id };
  });

  app.post('/admin/api/bulk-replays/count', tag('How many events a bulk replay with this filter would replay'), async (request) => {
    authorize(actorOf(request), 'bulk_replay_count');
    const ids = await actions.bulkIds(bulkFilterOf(bodyOf(request), clock.now()));
    return { count: ids.length };
  });

  app.post('/admin/api/bulk-replays', tag('Start a bulk replay (expectedCount: the count shown)'), async (request, reply) => {
    authorize(actorOf(request), 'bulk_replay_start');
    const body = bodyOf(request);
    const expected = integer({ expectedCount: typeof body.expectedCount === 'number' ? String(body.expectedCount) : body.expectedCount }, 'expectedCount', {
      min: 0,
      max: 1e9,
      fallback: -1,
    });
    if (expected < 0) throw new AdminInputError('expectedCount', 'is required: the count you were shown');
    return reply.code(202).send(await actions.startBulkReplay(actorOf(request), bulkFilterOf(body, clock.now()), reasonOf(body.reason), expected));
  });

  app.get('/admin/api/bulk-replays', tag('The latest bulk replays, newest first'), async () => ({ jobs: await actions.bulkJobs.recent(BULK_JOBS_SHOWN) }));

  app.get('/admin/api/bulk-replays/:id', tag('Progress of a bulk replay, from any serve process (interrupted: its process stopped)'), async (request, reply) => {
    return (await actions.job((request.params as { id: string }).id)) ?? reply.code(404).send({ error: 'not_found', message: 'no such bulk replay' });
  });

  app.post('/admin/api/bulk-replays/:id/cancel', tag('Stop a bulk replay after the event in hand, whichever process runs it'), async (request, reply) => {
    authorize(actorOf(request), 'bulk_replay_cancel');
    return (await actions.cancel(actorOf(request), (request.params as { id: string }).id)) ?? reply.code(404).send({ error: 'not_found', message: 'no such bulk replay' });
  });

  app.get(
    '/admin/api/reconcile/runs',
    tag('Reconcile runs, newest first, by keyset (as `webhook-inbox reconcile --history`)', { querystring: stringProps('provider', 'limit', 'cursor') }),
    async (request) => {
      const { runs, nextCursor } = await reconcileRunPage(dashboard, request.query as Query);
      return { runs, nextCursor };
    },
  );

  app.get('/admin/api/rejections', tag('The most recent refused deliveries (never a body or signature)', { querystring: stringProps('limit') }), async (request) => ({
    rejections: await reads.rejections(integer(request.query as Query, 'limit', { min: 1, max: 1000, fallback: 100 })),
  }));

  app.get('/admin/api/audit', tag('Admin actions, newest first', { querystring: stringProps('limit') }), async (request) => ({
    actions: await reads.auditEntries(integer(request.query as Query, 'limit', { min: 1, max: 500, fallback: 100 })),
  }));

  app.get('/admin/api/me', tag('Who you are signed in as'), async (request) => {
    const { name, role, via } = actorOf(request);
    return { name, role, via };
  });
};
