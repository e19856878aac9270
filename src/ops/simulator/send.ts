import type { ProviderSettings } from '../../config/settings.js';
import { describeError } from '../../errors.js';
import type { Clock } from '../../clock.js';
import type { ProviderName } from '../../model/delivery.js';
import type { SimulatedEvent } from './simulated-events.js';
import { signEvent } from './sign.js';

export interface SendOptions {
  /** The service's base URL (http://host:port) or a full webhook URL. */
  url: string;
  /** Rounds, one after the other. */
  repeat: number;
  /** Deliveries at the same time in each round. */
  concurrent: number;
  forged?: boolean;
  timeoutMs?: number;
}

export interface DeliveryResult {
  status: number | null;
  /** recorded / duplicate for a 200, the error code otherwise. */
  answer: string;
  ms: number;
}

export interface SendReport {
  url: string;
  provider: ProviderName;
  eventId: string;
  eventType: string;
  paymentId: string;
  deliveries: DeliveryResult[];
  /** "200 recorded" -> 1, "200 duplicate" -> 9, ... */
  answers: Record<string, number>;
}

/** The endpoint for a provider: a bare base URL gets /webhooks/<provider> appended. */
export function webhookUrl(url: string, provider: ProviderName): string {
  const parsed = new URL(url);
  if (parsed.pathname === '/' || parsed.pathname === '') parsed.pathname = `/webhooks/${provider}`;
  return parsed.toString();
}

/**
 * Delivers one event `repeat` x `concurrent` times, like a provider retrying and racing itself, and
 * reports every answer. Stripe deliveries are signed afresh each time (Stripe re-signs its retries).
 */
export async function sendEvent(event: SimulatedEvent, providers: ProviderSettings, clock: Clock, options: SendOptions): Promise<SendReport> {
  const target = webhookUrl(options.url, event.provider);
  const deliveries: DeliveryResult[] = [];
  for (let round = 0; round < options.repeat; round++) {
    const batch = Array.from({ length: options.concurrent }, () =>
      deliver(target, signEvent(event, providers, { now: clock.now(), forged: options.forged }), options.timeoutMs ?? 10_000),
    );
    deliveries.push(...(await Promise.all(batch)));
  }
  // In a fixed order (by status, the recorded copy before its duplicates), so that a report reads the
  // same whichever of the racing copies the inbox happened to record.
  const answers: Record<string, number> = {};
  for (const d of [...deliveries].sort(byAnswer)) {
    const key = d.status === null ? d.answer : `${d.status} ${d.answer}`;
    answers[key] = (answers[key] ?? 0) + 1;
  }
  return { url: target, provider: event.provider, eventId: event.eventId, eventType: event.eventType, paymentId: event.paymentId, deliveries, answers };
}

function byAnswer(a: DeliveryResult, b: DeliveryResult): number {
  const rank = (d: DeliveryResult) => [d.status ?? Infinity, d.answer === 'recorded' ? 0 : 1] as const;
  const [ra, rb] = [rank(a), rank(b)];
  return ra[0] - rb[0] || ra[1] - rb[1] || a.answer.localeCompare(b.answer);
}

async function deliver(url: string, delivery: ReturnType<typeof signEvent>, timeoutMs: number): Promise<DeliveryResult> {
  const started = performance.now();
  try {
    const response = await fetch(url, { method: 'POST', headers: delivery.headers, body: delivery.body, signal: AbortSignal.timeout(timeoutMs) });
    const text = await response.text();
    let answer = response.statusText;
    try {
      const body = JSON.parse(text) as { outcome?: string; error?: string };
      answer = body.outcome ?? body.error ?? answer;
    } catch {
      // Not our service, or not JSON: the status text is all there is to report.
    }
    return { status: response.status, answer, ms: Math.round(performance.now() - started) };
  } catch (error) {
    return { status: null, answer: `no answer (${describeError(error)})`, ms: Math.round(performance.now() - started) };
  }
}
