import { randomUUID } from 'node:crypto';
import { toDbTime } from './schema.js';

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
