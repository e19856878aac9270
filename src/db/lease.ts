import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { ExpressionBuilder } from 'kysely';
import { byGroup, type BatchRunner } from './batcher.js';
import { caseById } from './sql-case.js';
import { toDbTime, type InboxDatabase } from './schema.js';

/** Who holds a lease or lock: this host and process, and a random part, since pids are reused after restarts. */
export function processOwner(): string {
  return `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
}

/** Whether `owner` (as processOwner makes it) is a process of this host that no longer runs: its hold can be taken over at once. */
export function ownerGoneFromThisHost(owner: string): boolean {
  const match = /^(.*):(\d+):[0-9a-f]+$/.exec(owner);
  return match !== null && match[1] === hostname() && !processRunning(Number(match[2]));
}

/** Whether process `pid` runs on this host (one of another user's counts). */
export function processRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * A fresh lease for a claim: the token fences every write that follows, and the expiry doubles as
 * the row's due time, so a row whose holder died is found by the same query as any due row.
 */
export function newLease(owner: string, leaseMs: number, now: Date) {
  const expiresAt = new Date(now.getTime() + leaseMs);
  const token = randomUUID();
  const expiry = toDbTime(expiresAt);
  return { token, expiresAt, columns: { lease_owner: owner, lease_token: token, lease_expires_at: expiry, next_attempt_at: expiry } };
}

/**
 * Rows still held by these leases, each its own id under its own token: the fence of a batched write.
 * Written `id IN (…) AND lease_token = CASE id WHEN … END` rather than as one `(id AND token)` pair
 * per lease joined by OR, which PostgreSQL plans and then checks row by row pair by pair, a cost
 * that grows with the square of the batch. The leases are of distinct rows.
 */
export function heldBy(leases: Array<{ id: number; token: string }>) {
  return (eb: ExpressionBuilder<InboxDatabase, 'outbox' | 'webhook_events'>) =>
    eb.and([
      eb(
        'id',
        'in',
        leases.map((lease) => lease.id),
      ),
      eb('lease_token', '=', caseById(leases.map((lease) => [lease.id, lease.token]))),
    ]);
}

/** A claim of one row by one owner for `leaseMs`, as the stores batch them (see Batcher). */
export interface ClaimRequest {
  id: number;
  owner: string;
  leaseMs: number;
}

/**
 * The batch runner of a store's claims: the requests of one owner and lease time share one `claim`
 * (workers of one process share both; tests may run several in one process), and an id asked for
 * twice in a batch is claimed once. `claim` returns what it leased, by id.
 */
export function claimsByOwner<Claimed>(claim: (ids: number[], owner: string, leaseMs: number) => Promise<Map<number, Claimed>>): BatchRunner<ClaimRequest, Claimed | null> {
  return byGroup(
    (request) => `${request.owner}\u0000${request.leaseMs}`,
    async (group) => {
      const claimed = await claim([...new Set(group.map((request) => request.id))], group[0]!.owner, group[0]!.leaseMs);
      return group.map((request) => {
        const own = claimed.get(request.id) ?? null;
        claimed.delete(request.id);
        return own;
      });
    },
  );
}
