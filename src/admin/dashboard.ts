import { hostname } from 'node:os';
import type { Kysely } from 'kysely';
import type { Clock } from '../clock.js';
import type { AdminSettings, OperationsSettings } from '../config/settings.js';
import type { InboxDatabase } from '../db/schema.js';
import type { Inbox } from '../inbox.js';
import { OutboxStore } from '../outbox/outbox-store.js';
import { Replayer } from '../ops/replay.js';
import type { ScheduledJob } from '../ops/schedule.js';
import { AdminAccess } from './access.js';
import { AdminActions } from './actions.js';
import { AuditLog } from './audit.js';
import { AdminReads } from './read-queries.js';
import { AdminSessions } from './sessions.js';
import { AdminSignIn } from './sign-in.js';
import { SignInLimit } from './sign-in-limit.js';

/** Hourly, off the full hour and the statistics' retention. */
const RETENTION_CRON = '0 23 * * * *';

/** Deletes the sessions that expired and the refused tokens the sign-in window has passed. */
export function adminRetentionJob(db: Kysely<InboxDatabase>, clock: Clock, settings: AdminSettings): ScheduledJob {
  return {
    name: 'admin sessions retention',
    cron: RETENTION_CRON,
    run: async () => {
      await new AdminSessions(db, clock, settings.sessionTtlMs).deleteExpired();
      await new SignInLimit(db, clock, settings.signInLimit).deleteExpired();
    },
  };
}

/** Everything /admin reads and acts through, built once per server from the inbox it shows. */
export class AdminDashboard {
  readonly access: AdminAccess;
  readonly sessions: AdminSessions;
  readonly signIn: AdminSignIn;
  readonly audit: AuditLog;
  readonly actions: AdminActions;
  readonly outbox: OutboxStore;
  /** What the screens and the API read. */
  readonly reads: AdminReads;
  readonly clock: Clock;

  constructor(
    readonly inbox: Inbox,
    settings: AdminSettings,
    trustProxy: string[],
    /** The stuck-check thresholds, so the failed-and-stuck screen agrees with the scheduled check. */
    stuckThresholds: OperationsSettings['stuckCheck'],
  ) {
    const db = inbox.database;
    this.clock = inbox.clock;
    this.access = new AdminAccess(settings, trustProxy);
    this.sessions = new AdminSessions(db, this.clock, settings.sessionTtlMs);
    this.signIn = new AdminSignIn(this.access, new SignInLimit(db, this.clock, settings.signInLimit), inbox.metrics);
    this.audit = new AuditLog(db, this.clock);
    this.outbox = new OutboxStore(db, this.clock);
    this.reads = new AdminReads(inbox, this.audit, this.outbox, stuckThresholds);
    const replayer = new Replayer(inbox);
    this.actions = new AdminActions({
      db,
      clock: this.clock,
      replayer,
      outbox: this.outbox,
      audit: this.audit,
      logger: inbox.logger,
      runner: `${hostname()}:${process.pid}`,
    });
  }
}
