/** Keeps this thread's event loop busy for `ms`, as a flood of deliveries would the request thread's. */
export function keepBusy(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}
