import { TurnBuffer } from '../queue/turn-buffer.js';
import type { InboxMetrics } from './metrics.js';

/** The calls a workers' thread makes (it never yields to itself, and serves no /admin). */
type Counted = Exclude<keyof InboxMetrics, 'exposition' | 'workersYielded' | 'adminSignInRefused'>;

/** One metrics call made in another thread, to be made again on the metrics that are scraped. */
export type RelayedCall = { [Name in Counted]: [Name, ...Parameters<InboxMetrics[Name]>] }[Counted];

/** What travels between the two ends: the calls made since the last message. */
export interface RelayedCalls {
  kind: 'metrics';
  calls: RelayedCall[];
}

/**
 * The metrics of a thread whose counts belong to another's (the workers' thread of `serve`): each call
 * is recorded and sent on, those of one turn of the event loop in one message, and `replayCalls`
 * makes them on the scraped metrics, so GET /metrics shows one process. Nothing is scraped here.
 */
export class RelayedMetrics implements InboxMetrics {
  private readonly pending: TurnBuffer<RelayedCall>;

  constructor(post: (message: RelayedCalls) => void) {
    this.pending = new TurnBuffer((calls) => post({ kind: 'metrics', calls }));
  }

  deliveryAnswered(...args: Parameters<InboxMetrics['deliveryAnswered']>): void {
    this.add(['deliveryAnswered', ...args]);
  }

  leaseTakenOver(...args: Parameters<InboxMetrics['leaseTakenOver']>): void {
    this.add(['leaseTakenOver', ...args]);
  }

  attemptFinished(...args: Parameters<InboxMetrics['attemptFinished']>): void {
    this.add(['attemptFinished', ...args]);
  }

  eventProcessed(...args: Parameters<InboxMetrics['eventProcessed']>): void {
    this.add(['eventProcessed', ...args]);
  }

  exposition(): Promise<{ contentType: string; text: string }> {
    return Promise.reject(new Error('relayed metrics are scraped where they are replayed'));
  }

  /** Sends what is still pending (before the thread stops). */
  flush(): void {
    this.pending.flush();
  }

  private add(call: RelayedCall): void {
    this.pending.add(call);
  }
}

/** Makes the relayed calls on `metrics`. */
export function replayCalls(metrics: InboxMetrics, calls: readonly RelayedCall[]): void {
  for (const [name, ...args] of calls) {
    // Each entry pairs a name with that method's own arguments (RelayedCall).
    (metrics[name] as (...a: unknown[]) => void)(...args);
  }
}
