export interface Percentiles {
  count: number;
  p50: number | null;
  p99: number | null;
  p99_9: number | null;
  max: number | null;
}

/** Exact percentiles (nearest rank) of a list of samples, rounded to 0.01. */
export function percentiles(samples: ArrayLike<number>): Percentiles {
  const sorted = Float64Array.from(samples).sort();
  const at = (p: number) => (sorted.length === 0 ? null : round(sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!));
  return { count: sorted.length, p50: at(50), p99: at(99), p99_9: at(99.9), max: at(100) };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function round(value: number, digits = 2): number {
  const factor = 10 ** digits;
  return Math.round(value * factor) / factor;
}
