import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import type { AdminRole, AdminSettings } from '../config/settings.js';
import { InboxError } from '../errors.js';

/** Who is acting: a token's name or the user the proxy named, with the role they were given. */
export interface Actor {
  name: string;
  role: AdminRole;
  via: 'token' | 'session' | 'proxy';
}

/** What an actor may do through /admin besides reading, on a page or through the API alike. */
export type AdminPermission = 'replay' | 'replay_dry_run' | 'bulk_replay_count' | 'bulk_replay_start' | 'bulk_replay_cancel' | 'outbox_retry';

/**
 * The role each action needs, asked by the pages and the API alike. A replay's dry run and a bulk
 * replay's count change nothing and show no more than a viewer can list already (the events of that
 * filter), so a viewer may do them; whatever changes an event, a bulk replay or an outbox row needs
 * the operator.
 */
const ROLE_NEEDED: Readonly<Record<AdminPermission, AdminRole>> = {
  replay: 'operator',
  replay_dry_run: 'viewer',
  bulk_replay_count: 'viewer',
  bulk_replay_start: 'operator',
  bulk_replay_cancel: 'operator',
  outbox_retry: 'operator',
};

export function may(actor: Actor, permission: AdminPermission): boolean {
  return actor.role === 'operator' || ROLE_NEEDED[permission] === 'viewer';
}

/** An action the actor's role does not allow: a 403, a page or JSON as the route answers. */
export class AdminForbiddenError extends InboxError {
  constructor() {
    super('forbidden', 403, 'this needs the operator role; a viewer may only read');
  }
}

/** Throws AdminForbiddenError unless `actor` has `permission`. */
export function authorize(actor: Actor, permission: AdminPermission): void {
  if (!may(actor, permission)) throw new AdminForbiddenError();
}

const digest = (value: string) => createHash('sha256').update(value).digest();

/**
 * Who may use /admin, decided from ADMIN_TOKENS, the signed session and the trusted proxy. Tokens are
 * compared through their hashes in constant time, so timing reveals nothing of a token.
 */
export class AdminAccess {
  private readonly tokens: Array<{ name: string; role: AdminRole; hash: Buffer }>;
  private readonly trusted = new BlockList();
  private readonly trustsAnyone: boolean;

  constructor(
    readonly settings: AdminSettings,
    trustProxy: string[],
  ) {
    this.tokens = settings.tokens.map(({ name, role, token }) => ({ name, role, hash: digest(token) }));
    for (const entry of trustProxy) {
      const [address = '', bits] = entry.split('/');
      const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
      if (bits === undefined) this.trusted.addAddress(address, family);
      else this.trusted.addSubnet(address, Number(bits), family);
    }
    this.trustsAnyone = trustProxy.length > 0;
  }

  /** The key session cookies are signed with: derived from the tokens, so every process agrees and changing the tokens ends every session. */
  sessionSecret(): string {
    return createHash('sha256')
      .update(`webhook-inbox admin session\n${this.settings.tokens.map((t) => `${t.name}:${t.role}:${t.token}`).join('\n')}`)
      .digest('base64url');
  }

  byToken(token: string): Actor | null {
    const hash = digest(token);
    let found: Actor | null = null;
    // Every entry is compared, whichever matches: the time taken does not depend on which one.
    for (const entry of this.tokens) if (timingSafeEqual(entry.hash, hash)) found = { name: entry.name, role: entry.role, via: 'token' };
    return found;
  }

  /** Whether `address` (the connection's peer) is one of TRUST_PROXY. */
  isTrustedProxy(address: string | undefined): boolean {
    if (!this.trustsAnyone || !address) return false;
    const plain = address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
    return this.trusted.check(plain, isIP(plain) === 6 ? 'ipv6' : 'ipv4');
  }

  /** The user a trusted proxy named, with the first matching ADMIN_PROXY_ROLES role; null if none matches. */
  byProxyUser(user: string): Actor | null {
    const match = this.settings.proxyRoles.find((entry) => entry.user === user || entry.user === '*');
    return match ? { name: user, role: match.role, via: 'proxy' } : null;
  }

  /** The actor of a session signed in as `name`, with that entry's current role: null once it is gone from ADMIN_TOKENS. */
  forSession(name: string): Actor | null {
    const entry = this.tokens.find((t) => t.name === name);
    return entry ? { name, role: entry.role, via: 'session' } : null;
  }
}
