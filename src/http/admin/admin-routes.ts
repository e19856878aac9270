import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import fastifyCookie from '@fastify/cookie';
import fastifySwagger from '@fastify/swagger';
import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Actor } from '../../admin/access.js';
import type { AdminDashboard } from '../../admin/dashboard.js';
import { headerValue } from '../../providers/headers.js';
import { jsonErrorHandler } from '../errors.js';
import { apiRoutes } from './api-routes.js';
import { ASSETS } from './assets.js';
import { pageRoutes } from './page-routes.js';
import { routePath } from './security-headers.js';
import { csrfOf, SESSION_COOKIE } from './session.js';

/** Routes anyone may reach: the sign-in page and the static files it uses. */
const PUBLIC = new Set(['/admin/sign-in', ...Object.keys(ASSETS).map((name) => `/admin/assets/${name}`)]);

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the admin access hook on every /admin route that needs a credential. */
    adminActor?: Actor;
    /** The session id the cookie carried, when the actor came by a session. */
    adminSessionId?: string;
  }
}

export interface AdminRequestContext {
  actor: Actor;
  /** The token a form must carry for a state-changing request (or an Origin of ours). */
  csrfToken: string;
}

export function isApi(request: FastifyRequest): boolean {
  return routePath(request).startsWith('/admin/api/');
}

/**
 * /admin: the dashboard's pages and its JSON API. Every route but sign-in needs a credential (a
 * bearer token, the signed session cookie, or the user a trusted proxy names); without one the API
 * answers 401 and pages redirect to sign-in, revealing nothing. A state-changing request through a
 * cookie or proxy (ambient credentials a browser attaches by itself) must also come from our own
 * Origin or carry the session's CSRF token.
 */
export const adminRoutes: FastifyPluginAsync<{ dashboard: AdminDashboard }> = async (app, { dashboard }) => {
  const { access } = dashboard;
  const secret = access.settings.tokens.length > 0 ? access.sessionSecret() : randomBytes(32).toString('base64url');
  await app.register(fastifyCookie, { secret });
  await app.register(fastifySwagger, {
    openapi: {
      info: {
        title: 'webhook-inbox admin API',
        version: '1',
        description: 'What the /admin dashboard reads and does. Authenticate with Authorization: Bearer <ADMIN_TOKENS token>.',
      },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    hideUntagged: true,
  });
  // A field given twice keeps both values, as a query parameter does, and is refused as such (input.ts):
  // neither value is picked over the other, a CSRF token least of all.
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 64 * 1024 }, (_request, body, done) => {
    const fields = new Map<string, string[]>();
    for (const [name, value] of new URLSearchParams(body as string)) fields.set(name, [...(fields.get(name) ?? []), value]);
    done(null, Object.fromEntries([...fields].map(([name, values]) => [name, values.length === 1 ? values[0] : values])));
  });

  // The API's own words for an error; the pages answer with a page of their own (page-routes.ts).
  app.setErrorHandler(jsonErrorHandler('internal error of the admin API (logged)'));

  app.addHook('onRequest', async (request, reply) => {
    if (PUBLIC.has(routePath(request))) return;
    const { actor, sessionId, retryAfterSeconds } = await identify(app, dashboard, request);
    if (retryAfterSeconds !== undefined) return refuseTooMany(reply, retryAfterSeconds);
    if (!actor) return refuse(request, reply, 401, 'unauthorized', 'sign in first: a bearer token (ADMIN_TOKENS) or a session');
    request.adminActor = actor;
    request.adminSessionId = sessionId;
  });
  // After the body is read: a form's token travels in it.
  app.addHook('preHandler', async (request, reply) => {
    const actor = request.adminActor;
    if (!actor || ['GET', 'HEAD', 'OPTIONS'].includes(request.method) || actor.via === 'token') return;
    if (!sameOriginOrToken(request, csrfOf(request, actor, secret))) {
      return refuse(request, reply, 403, 'csrf', 'refused: the request did not come from this dashboard (Origin or CSRF token)');
    }
  });

  app.get('/admin/api/openapi.json', { schema: { tags: ['meta'], summary: 'This description' } }, async () => app.swagger());
  await app.register(apiRoutes, { dashboard });
  await app.register(pageRoutes, { dashboard, secret });
  for (const [name, asset] of Object.entries(ASSETS)) app.get(`/admin/assets/${name}`, async (_request, reply) => reply.type(asset.type).send(asset.body));
};

interface Identity {
  actor: Actor | null;
  sessionId?: string;
  retryAfterSeconds?: number;
}

async function identify(app: FastifyInstance, dashboard: AdminDashboard, request: FastifyRequest): Promise<Identity> {
  const { access } = dashboard;
  const authorization = headerValue(request.headers, 'authorization');
  if (authorization?.toLowerCase().startsWith('bearer ')) {
    return dashboard.signIn.attempt(authorization.slice('bearer '.length).trim(), { address: request.ip, via: 'bearer', log: request.log });
  }
  const { proxyHeader } = access.settings;
  if (access.settings.auth === 'proxy' && proxyHeader && access.isTrustedProxy(request.socket.remoteAddress)) {
    const user = headerValue(request.headers, proxyHeader);
    if (user) return { actor: access.byProxyUser(user) };
  }
  const cookie = request.cookies[SESSION_COOKIE];
  const unsigned = cookie ? app.unsignCookie(cookie) : null;
  if (!unsigned?.valid || unsigned.value === null) return { actor: null };
  const name = await dashboard.sessions.actorOf(unsigned.value);
  return { actor: name === null ? null : access.forSession(name), sessionId: unsigned.value };
}

/** Of the same length whatever is compared: a token of any length or characters is refused, never an error. */
const fixedLength = (value: string) => createHash('sha256').update(value).digest();

/** An Origin must be ours; without one, the form or header token must match. */
function sameOriginOrToken(request: FastifyRequest, expected: string): boolean {
  const origin = headerValue(request.headers, 'origin');
  if (origin !== undefined && origin !== 'null') return origin === `${request.protocol}://${request.host}`;
  const body = request.body as Record<string, unknown> | undefined;
  const given = headerValue(request.headers, 'x-csrf-token') ?? (typeof body?._csrf === 'string' ? body._csrf : '');
  return given !== '' && timingSafeEqual(fixedLength(given), fixedLength(expected));
}

/** A client over the sign-in limit: 429, and when it may try again. */
function refuseTooMany(reply: FastifyReply, retryAfterSeconds: number): FastifyReply {
  return reply
    .code(429)
    .header('retry-after', String(retryAfterSeconds))
    .send({ error: 'too_many_sign_in_failures', message: `too many refused tokens from your address: try again in ${retryAfterSeconds} seconds` });
}

function refuse(request: FastifyRequest, reply: FastifyReply, status: number, error: string, message: string): FastifyReply {
  if (!isApi(request) && status === 401) return reply.redirect(`/admin/sign-in`, 303);
  return reply.code(status).send({ error, message });
}
