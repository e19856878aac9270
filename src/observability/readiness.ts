import type { Logger } from 'pino';
import { describeError } from '../errors.js';
import type { InboxStore } from '../store/inbox-store.js';

/** One dependency the service needs to take traffic; `check` rejects when it is not usable. */
export interface ReadinessCheck {
  name: string;
  check: () => Promise<void>;
}

export interface CheckReport {
  ok: boolean;
  ms: number;
  error?: string;
}

export interface ReadinessReport {
  ready: boolean;
  checks: Record<string, CheckReport>;
}

/**
 * The checks behind GET /readyz. The store registers its own; other transports (a queue) add theirs
 * with `add`. Checks run concurrently, each bounded in time, and a change of state is logged once
 * rather than on every probe.
 */
export class Readiness {
  private readonly checks = new Map<string, ReadinessCheck>();
  private readonly failing = new Set<string>();

  constructor(
    private readonly logger: Logger,
    private readonly timeoutMs = 2000,
  ) {}

  add(check: ReadinessCheck): void {
    if (this.checks.has(check.name)) throw new Error(`a readiness check named "${check.name}" is already registered`);
    this.checks.set(check.name, check);
  }

  async report(): Promise<ReadinessReport> {
    const entries = await Promise.all([...this.checks.values()].map(async ({ name, check }) => [name, await this.run(name, check)] as const));
    return { ready: entries.every(([, report]) => report.ok), checks: Object.fromEntries(entries) };
  }

  private async run(name: string, check: () => Promise<void>): Promise<CheckReport> {
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    let error: string | undefined;
    try {
      await Promise.race([check(), timeout]);
    } catch (failure) {
      error = describeError(failure);
    } finally {
      clearTimeout(timer);
    }
    const ms = Math.round(performance.now() - started);
    if (error !== undefined && !this.failing.has(name)) {
      this.failing.add(name);
      this.logger.warn({ check: name, error }, `not ready: ${name} check failed`);
    } else if (error === undefined && this.failing.delete(name)) {
      this.logger.info({ check: name }, `ready again: ${name} check passes`);
    }
    return error === undefined ? { ok: true, ms } : { ok: false, ms, error };
  }
}

/** The store's checks: the database answers, and every migration is applied. */
export function storeChecks(store: InboxStore): ReadinessCheck[] {
  return [
    { name: 'store', check: () => store.ping() },
    {
      name: 'migrations',
      check: async () => {
        const pending = await store.pendingMigrations();
        if (pending.length > 0) throw new Error(`not applied: ${pending.join(', ')} (run webhook-inbox migrate)`);
      },
    },
  ];
}
