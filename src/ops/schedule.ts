import { Cron } from 'croner';
import type { OperationsSettings } from '../config/settings.js';
import { processOwner } from '../db/lease.js';
import { claimScheduledTick } from '../db/scheduled-runs.js';
import { PROVIDER_NAMES } from '../model/delivery.js';
import { deleteStatisticsBefore } from '../observability/delivery-stats.js';
import { postAlert, providerAlertBody, sendStuckAlert } from './alert.js';
import { providerAlertCheck } from './provider-alerts.js';
import { Archiver } from './archive/archiver.js';
import { openArchiveStorage } from './archive/open-storage.js';
import type { Inbox } from '../inbox.js';
import { runScheduledReconcile } from './reconcile/alerting.js';
import { handleStripeHealthEvents } from './reconcile/stripe-health.js';
import { findStuck, summarizeStuck, type StuckReport } from './stuck.js';

export interface OperationsDependencies {
  /** The inbox the jobs look at and act on. */
  inbox: Inbox;
  /** Jobs of the layers above (the dashboard's expired sessions), scheduled and claimed like these. */
  jobs?: ScheduledJob[];
}

/** A job on a cron schedule (UTC); `name` is its row in scheduled_runs. */
export interface ScheduledJob {
  name: string;
  cron: string;
  run: () => Promise<unknown>;
}

/** The stuck check as the service runs it: alert when anything is found, log either way. */
export async function runStuckCheck(settings: OperationsSettings, inbox: Pick<Inbox, 'database' | 'clock' | 'logger'>, source: string): Promise<StuckReport> {
  const report = await findStuck(inbox.database, inbox.clock, settings.stuckCheck);
  if (report.total === 0) inbox.logger.info(`stuck check: ${summarizeStuck(report)}`);
  else if (settings.alertWebhookUrl) await sendStuckAlert(settings.alertWebhookUrl, report, inbox.logger, source);
  else inbox.logger.warn({ counts: report.counts, outboxCounts: report.outboxCounts }, `${summarizeStuck(report)} (set ALERT_WEBHOOK_URL to be alerted)`);
  return report;
}

export interface ScheduledOperations {
  /** Stops the timers and waits for a run in progress. */
  stop(): Promise<void>;
}

/** Per-minute counts and samples older than this are deleted: the overview and the alert rules look back hours, not weeks. */
const STATS_RETENTION_MS = 14 * 24 * 60 * 60_000;
/** Hourly, off the full hour that other jobs favour. */
const STATS_RETENTION_CRON = '0 17 * * * *';

/**
 * The service's operator jobs on cron schedules (UTC): the stuck check (daily by default), the
 * provider alert rules, the retention of the per-minute statistics and, when configured, retention
 * archiving and reconciliation with the providers' APIs. Every serve process schedules them and one
 * runs each tick (claimScheduledTick). A run still going when the next is due is skipped, not stacked.
 */
export function scheduleOperations(settings: OperationsSettings, { inbox, jobs: ownJobs = [] }: OperationsDependencies): ScheduledOperations {
  const { database: db, clock, logger } = inbox;
  const running = new Set<Promise<unknown>>();
  const jobs: Cron[] = [];
  const owner = processOwner();
  const schedule = (name: string, pattern: string | null, run: () => Promise<unknown>) => {
    if (pattern === null) return;
    const job = new Cron(pattern, { timezone: 'UTC', protect: true, unref: true }, async (self: Cron) => {
      // The latest time the pattern names, up to now: the tick this wake-up is for, the same in every process.
      const tick = self.previousRuns(1, new Date(Date.now() + 1))[0] ?? new Date();
      const started = claimScheduledTick(db, name, tick, owner)
        .then((mine) => (mine ? run() : logger.debug({ job: name, tick }, `scheduled ${name}: another process runs this tick`)))
        .catch((error: unknown) => logger.error({ err: error, job: name }, `scheduled ${name} failed`))
        .finally(() => running.delete(started));
      running.add(started);
      await started;
    });
    jobs.push(job);
    logger.info({ job: name, cron: pattern, next: job.nextRun()?.toISOString() }, `scheduled ${name}`);
  };

  schedule('statistics retention', STATS_RETENTION_CRON, () => deleteStatisticsBefore(db, new Date(clock.now().getTime() - STATS_RETENTION_MS)));
  schedule('stuck check', settings.stuckCheck.cron, () => runStuckCheck(settings, inbox, 'scheduled check'));
  for (const job of ownJobs) schedule(job.name, job.cron, job.run);
  const { archive } = settings;
  if (archive.to !== null) {
    const storage = openArchiveStorage(archive.to, archive);
    schedule('archive', archive.cron, async () => {
      const report = await new Archiver(inbox).runOnce({ storage, olderThanMs: archive.olderThanMs });
      logger.info({ to: storage.location, archived: report.archived, kept: report.kept, files: report.parts.length, elapsedMs: report.elapsedMs }, 'scheduled archive finished');
    });
  }

  schedule('reconcile', settings.reconcile.cron, () => runScheduledReconcile(settings.reconcile, settings.alertWebhookUrl, inbox));
  const configured = PROVIDER_NAMES.filter((name) => !inbox.providers.unconfigured().some((u) => u.name === name));
  const check = providerAlertCheck(db, clock, settings.alerts, configured);
  const url = settings.alertWebhookUrl;
  // Stripe's health events are looked for on the same schedule: an alert and a reconcile each.
  schedule('provider alerts', settings.alerts.cron, async () => {
    await check(url ? (alerts) => postAlert(url, providerAlertBody(alerts, 'provider alerts')) : null, (alert) =>
      logger.warn({ provider: alert.provider, rule: alert.rule }, alert.message),
    );
    await handleStripeHealthEvents(settings, inbox);
  });

  return {
    async stop() {
      for (const job of jobs) job.stop();
      await Promise.all(running);
    },
  };
}
