import type { Logger } from 'pino';
import type { AdminSignInRefusal, AdminSignInVia, InboxMetrics } from '../observability/metrics.js';
import type { Actor, AdminAccess } from './access.js';
import { clientKey, type SignInLimit } from './sign-in-limit.js';

/** What a presented token came to: its actor, or a refusal (with the wait, when the client is over the limit). */
export interface SignInResult {
  actor: Actor | null;
  /** Set when the client has too many refused tokens: every token from it is refused until then. */
  retryAfterSeconds?: number;
}

/** Where a token came from and how: the client address as TRUST_PROXY lets us see it, and the request's logger. */
export interface SignInAttempt {
  address: string;
  via: AdminSignInVia;
  log: Pick<Logger, 'warn'>;
}

/**
 * Every token /admin is given, by the sign-in form or a bearer header, goes through here: checked
 * against ADMIN_TOKENS and the sign-in limit of its client. A refusal is logged with the client's
 * address and the reason (never the token) and counted in the metrics.
 */
export class AdminSignIn {
  constructor(
    private readonly access: AdminAccess,
    private readonly limit: SignInLimit,
    private readonly metrics: InboxMetrics,
  ) {}

  async attempt(token: string, attempt: SignInAttempt): Promise<SignInResult> {
    const actor = this.access.byToken(token);
    const client = clientKey(attempt.address);
    let wait = await this.limit.retryAfter(client);
    if (wait === null && !actor) wait = await this.limit.refused(client);
    if (wait !== null) {
      this.refuse(attempt, 'rate_limited', { retryAfterSeconds: wait });
      return { actor: null, retryAfterSeconds: wait };
    }
    if (!actor) this.refuse(attempt, 'unknown_token', {});
    return { actor };
  }

  private refuse({ address, via, log }: SignInAttempt, reason: AdminSignInRefusal, extra: Record<string, unknown>): void {
    log.warn({ clientAddress: address, via, reason, ...extra }, 'admin sign-in refused');
    this.metrics.adminSignInRefused?.(via, reason);
  }
}
