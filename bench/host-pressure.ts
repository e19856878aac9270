import { readFileSync } from 'node:fs';

/**
 * The host's pressure stall information (Linux PSI, /proc/pressure): the time during which some task
 * waited for a CPU, or for I/O. Read around a step, it tells a step made slow by the machine (a disk
 * stall every commit waits for, CPU taken by something else) from one made slow by the target's own
 * work, which shows as CPU pressure too but not as I/O pressure.
 */
export interface HostPressure {
  /** Milliseconds per second of the step during which some task waited for a CPU. */
  cpuMsPerSec: number;
  /** Milliseconds per second of the step during which some task waited for I/O. */
  ioMsPerSec: number;
}

/** Microseconds of "some" stall so far, or null where the kernel does not report it. */
function someTotalUs(resource: 'cpu' | 'io'): number | null {
  try {
    const some = /^some .*total=(\d+)/m.exec(readFileSync(`/proc/pressure/${resource}`, 'utf8'));
    return some ? Number(some[1]) : null;
  } catch {
    return null;
  }
}

/** Starts measuring; the function returned gives the pressure since then, or null where there is no PSI. */
export function measureHostPressure(): () => HostPressure | null {
  const started = performance.now();
  const cpu = someTotalUs('cpu');
  const io = someTotalUs('io');
  return () => {
    const cpuNow = someTotalUs('cpu');
    const ioNow = someTotalUs('io');
    if (cpu === null || io === null || cpuNow === null || ioNow === null) return null;
    const seconds = (performance.now() - started) / 1000;
    const perSec = (us: number) => Math.round(us / 1000 / seconds);
    return { cpuMsPerSec: perSec(cpuNow - cpu), ioMsPerSec: perSec(ioNow - io) };
  };
}
