import { isIPv4, isIPv6 } from 'node:net';
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import type { AdminSettings } from '../config/settings.js';
import { fromDbTime, toDbTime, type InboxDatabase } from '../db/schema.js';

/**
 * Who the sign-in limit counts: an IPv4 address, or the /64 an IPv6 address is in (what one host or
 * household is usually given, so that walking through its addresses gains nothing).
 */
export function clientKey(address: string): string {
  const mapped = address.toLowerCase().startsWith('::ffff:') ? address.slice('::ffff:'.length) : address;
  if (isIPv4(mapped)) return mapped;
  const plain = address.split('%')[0]!;
  if (!isIPv6(plain)) return address;
  const [head = '', tail] = plain.split('::');
  const groups = (part: string | undefined) => (part ? part.split(':') : []);
  // An IPv4 tail (::ffff:1.2.3.4 aside, e.g. 64:ff9b::1.2.3.4) is the last 32 bits: two groups.
  const width = (parts: string[]) => parts.reduce((n, part) => n + (part.includes('.') ? 2 : 1), 0);
  const front = groups(head);
  const back = groups(tail);
  const all = tail === undefined ? front : [...front, ...Array<string>(8 - width(front) - width(back)).fill('0'), ...back];
  return `${all
    .slice(0, 4)
    .map((group) => parseInt(group, 16).toString(16))
    .join(':')}::/64`;
}

/**
 * The sign-in limit: a client that presented `failures` refused tokens (sign-in form or bearer)
 * within the window has every token refused until the oldest of them leaves it, whether the next one
 * is right or not, so guessing learns nothing more. Kept in admin_sign_in_failures rather than in a
 * process's memory, so the limit holds across every replica behind a load balancer; a client that is
 * refused adds no rows, so a flood from one address grows nothing.
 */
export class SignInLimit {
  constructor(
    private readonly db: Kysely<InboxDatabase>,
    private readonly clock: Clock,
    private readonly limit: AdminSettings['signInLimit'],
  ) {}

  /** Seconds until `client` may present a token again; null while it may. */
  async retryAfter(client: string): Promise<number | null> {
    return this.waitFrom(await this.latest(client, this.limit.failures));
  }

  /**
   * Counts a refused token of `client` (which retryAfter let through): the seconds it must now wait,
   * or null. Counted after the write, so of refusals racing each other no more than the limit are
   * answered as plain refusals.
   */
  async refused(client: string): Promise<number | null> {
    await this.db
      .insertInto('admin_sign_in_failures')
      .values({ client, failed_at: toDbTime(this.clock.now()) })
      .execute();
    const latest = await this.latest(client, this.limit.failures + 1);
    return latest.length > this.limit.failures ? this.waitFrom(latest) : null;
  }

  /** Deletes the refusals the window has passed. */
  async deleteExpired(): Promise<void> {
    await this.db.deleteFrom('admin_sign_in_failures').where('failed_at', '<=', this.windowStart()).execute();
  }

  private windowStart(): string {
    return toDbTime(new Date(this.clock.now().getTime() - this.limit.windowMs));
  }

  /** The client's refusals within the window, newest first, at most `count`. */
  private async latest(client: string, count: number): Promise<Date[]> {
    const rows = await this.db
      .selectFrom('admin_sign_in_failures')
      .select('failed_at')
      .where('client', '=', client)
      .where('failed_at', '>', this.windowStart())
      .orderBy('failed_at', 'desc')
      .limit(count)
      .execute();
    return rows.map((row) => fromDbTime(row.failed_at));
  }

  /** While `failures` refusals are in the window, the client waits until the one that many back leaves it. */
  private waitFrom(latest: Date[]): number | null {
    const limiting = latest[this.limit.failures - 1];
    if (!limiting) return null;
    return Math.max(1, Math.ceil((limiting.getTime() + this.limit.windowMs - this.clock.now().getTime()) / 1000));
  }
}
