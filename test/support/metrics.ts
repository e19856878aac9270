/** Reads one sample from Prometheus text: the first series named `name` carrying all of `labels`. */
export function metricValue(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    const sample = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (sample?.[1] !== name) continue;
    const found = new Map([...(sample[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(labels).every(([key, value]) => found.get(key) === value)) return Number(sample[3]);
  }
  return undefined;
}
