import type { FastifyInstance, FastifyRequest } from 'fastify';

/** No inline script or style, nothing from elsewhere, never framed, never cached. */
export const SECURITY_HEADERS = {
  'content-security-policy': "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'same-origin',
};

/**
 * Every answer under /admin carries the security headers, whatever produced it: a route, the 404 of
 * a path no route matches, or an error answered before any route ran (a bad query, a body too large
 * or of a type not taken). Hence a hook of the whole server, run as each answer is sent, and not one
 * of the admin routes, which a request that matches none of them never reaches. It must be added
 * before any route is registered, so that every route inherits it.
 */
export function adminSecurityHeaders(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (underAdmin(request)) void reply.headers(SECURITY_HEADERS);
    return payload;
  });
}

function underAdmin(request: FastifyRequest): boolean {
  const path = routePath(request);
  return path === '/admin' || path.startsWith('/admin/');
}

/**
 * The path a request is judged by. The router decodes a path before it matches it (`/%61dmin`
 * reaches `/admin`), so the matched route's own path decides, else the decoded path: never the raw
 * URL, which would let an encoded path be judged as another route than the one that answers it.
 */
export function routePath(request: FastifyRequest): string {
  return request.routeOptions.url ?? decodedPath(request.url);
}

function decodedPath(url: string): string {
  const path = url.split('?')[0]!;
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}
