import type { BacklogSummary, Check, Summary, TargetSummary } from './results.js';
import type { BenchSettings } from './settings.js';
import { peerOn, TARGETS } from './targets.js';

/** The bench's targets (docs/performance.md), each with whether this run met it and what it measured. */
export function checks(settings: BenchSettings, targets: TargetSummary[], growth: Summary['growth'], backlog: BacklogSummary[], capacity: Summary['capacity']): Check[] {
  const result: Check[] = [];
  // The same targets on each server, each read against that server's baseline and naive handler.
  for (const store of ['mysql', 'postgres'] as const) {
    const on = (name: string) => peerOn(store, name);
    const server = store === 'postgres' ? 'PostgreSQL: ' : '';
    const background = targets.find((t) => t.target === on('background'));
    const baseline = targets.find((t) => t.target === on('baseline'));
    if (background?.ackRatio != null) {
      result.push({
        target: `${server}default-mode ack throughput >= 2x baseline`,
        met: background.ackRatio >= 2,
        measured: `${background.ackRatio}x (${background.acksPerSec} vs ${baseline?.acksPerSec} acks/s)`,
      });
      const lowest = Math.min(...background.ackRatios);
      result.push({
        target: `${server}never below 1x baseline (every repetition)`,
        met: lowest >= 1,
        measured: `lowest ${lowest}x over ${background.ackRatios.length} repetition(s)`,
      });
    }
    const at1000 = (t: TargetSummary | undefined) => t?.paced.find((p) => p.rate === 1000);
    if (at1000(background) && at1000(baseline)) {
      const own = at1000(background)!.p99;
      const floor = at1000(baseline)!.p99;
      result.push({ target: `${server}ack p99 at 1000/s <= baseline p99`, met: own !== null && floor !== null && own <= floor, measured: `${own} ms vs baseline ${floor} ms` });
    }
    const keepsUp = (what: string, keepUp: number | null, processedPerSec: number | null, lag: TargetSummary['lagMs']) => {
      if (keepUp === null || !lag) return;
      result.push({
        target: `${server}processing keeps up, ${what}: processed/s >= 0.95 x new events/s, lag p99 < 1 s`,
        met: keepUp >= 0.95 && lag.p99 !== null && lag.p99 < 1000,
        measured: `keep-up ${keepUp}, ${processedPerSec} processed/s, lag p50 ${lag.p50} / p99 ${lag.p99} ms`,
      });
    };
    const sustained = background?.sustained;
    if (sustained) keepsUp(`${settings.durationSec} s at ${sustained.rate}/s offered`, sustained.keepUp, sustained.processedPerSec, sustained.lagMs);
    if (background) keepsUp(`${settings.durationSec} s saturation run`, background.keepUp, background.processedPerSec, background.lagMs);
    const receiveOnly = targets.find((t) => t.target === on('receive-only'));
    if (receiveOnly?.ackRatio != null) {
      result.push({
        target: `${server}receive-only ack throughput >= 2x baseline`,
        met: receiveOnly.ackRatio >= 2,
        measured: `${receiveOnly.ackRatio}x (${receiveOnly.acksPerSec} acks/s)`,
      });
    }
    const processing = backlog.find((b) => b.store === store);
    if (processing?.cpuRatioToBaselineAck != null) {
      const database = store === 'postgres' ? 'PostgreSQL' : 'MariaDB';
      result.push({
        target: `${server}processing CPU per event (worker + ${database}, backlog step) <= 2x the baseline's CPU per acknowledgement (service + ${database})`,
        met: processing.cpuRatioToBaselineAck <= 2,
        measured: `${processing.cpuRatioToBaselineAck}x (${processing.serviceCpuMsPerEvent} + ${processing.databaseCpuMsPerEvent} ms per event)`,
      });
    }
    const ours = capacity.find((c) => c.target === on('background'));
    if (ours?.ratioToNaive != null) {
      const naive = capacity.find((c) => c.target === on('naive'))!;
      result.push({
        target: `${server}end-to-end capacity of the default mode >= 2x the naive handler's`,
        met: ours.ratioToNaive >= 2,
        measured: `${ours.ratioToNaive}x (${ours.capacity}/s vs ${naive.capacity}/s)`,
      });
    }
  }
  const largest = growth.filter((g) => g.target === 'background').at(-1);
  if (largest?.ratioToEmpty != null) {
    result.push({
      target: `growth: ${largest.rows.toLocaleString('en')} rows >= 0.8x empty-table throughput`,
      met: largest.ratioToEmpty >= 0.8,
      measured: `${largest.ratioToEmpty}x (${largest.acksPerSec} acks/s)`,
    });
  }
  const flood = targets.find((t) => t.target === 'background')?.flood;
  if (flood) {
    result.push({
      target: `a forged flood does not starve valid deliveries (${flood.rate}/s valid during the flood): every valid one acknowledged, no forged one`,
      met: flood.validRefused === 0 && flood.forgedAccepted === 0,
      measured: `valid p99 ${flood.floodP99Ms} ms during ${flood.forgedPerSec} forged/s (${flood.quietP99Ms} ms without), ${flood.validRefused} valid refused, ${flood.forgedAccepted} forged accepted`,
    });
  }
  const services = targets.filter((t) => TARGETS[t.target]!.kind === 'inbox' || TARGETS[t.target]!.kind === 'receiver');
  if (services.length > 0) {
    const peak = Math.max(...services.map((t) => t.peakRssMb));
    result.push({ target: 'peak RSS of one service process <= 250 MB', met: peak <= 250, measured: `${peak} MB` });
  }
  return result;
}
