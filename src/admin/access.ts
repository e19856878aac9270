import { createHash, timingSafeEqual } from 'node:crypto';
import { BlockList, isIP } from 'node:net';
import type { AdminRole, AdminSettings } from '../config/settings.js';

/** Who is acting: a token's name or the user the proxy named, with the role they were given. */
export interface Actor {
  name: string;
  role: AdminRole;
  via: 'token' | 'session' | 'proxy';
}

/** What each role may do; a viewer reads, an operator also changes things (replay, retry). */
export function mayChange(actor: Actor): boolean {
  return actor.role === 'operator';
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

  /** The session cookie's content (signed by the caller): who, and until when. */
  sessionValue(actor: Actor, now: Date): string {
    return `${actor.name}|${now.getTime() + this.settings.sessionTtlMs}`;
  }

  /** The actor of a session value whose signature was checked; null once expired or its token is gone. */
  fromSession(value: string, now: Date): Actor | null {
    const separator = value.lastIndexOf('|');
    const name = value.slice(0, separator);
    const expires = Number(value.slice(separator + 1));
    if (separator <= 0 || !Number.isFinite(expires) || expires <= now.getTime()) return null;
    // The role is read from the current tokens: a token removed or demoted takes its sessions with it.
    const entry = this.tokens.find((t) => t.name === name);
    return entry ? { name, role: entry.role, via: 'session' } : null;
  }
}
