import type { Actor } from '../../admin/access.js';

/** What every signed-in page knows: who is looking, the token its forms carry, and the words of the domains in use. */
export interface PageContext {
  actor: Actor;
  csrf: string;
  /** Words for people per outbox kind, as the domains in use give them (DomainViews.outboxKinds). */
  outboxKinds: Readonly<Record<string, string>>;
}
