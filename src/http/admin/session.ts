import { createHmac } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { Actor } from '../../admin/access.js';

/** The signed session cookie's name (path /admin, HttpOnly, SameSite=Strict). */
export const SESSION_COOKIE = 'wi_admin';

/** Bound to the session (or the proxy user): a token from another session is worthless here. */
export function csrfOf(request: FastifyRequest, actor: Actor, secret: string): string {
  const binding = actor.via === 'session' ? (request.cookies[SESSION_COOKIE] ?? '') : `${actor.via}:${actor.name}`;
  return createHmac('sha256', secret).update(`csrf\n${binding}`).digest('base64url');
}
