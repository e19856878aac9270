import { setFlagsFromString } from 'node:v8';

/**
 * Sets how far V8 lets the old generation grow past what survived its last full collection.
 *
 * Left to itself, V8 picks a factor of up to 4 when the program allocates fast, and a busy receiver
 * does: the old generation then holds several times the live heap in garbage, most of the process's
 * peak RSS. A fixed factor bounds that garbage without a hard limit: unlike --max-old-space-size, a
 * burst of large bodies makes the heap grow with it instead of crashing the process. The cost is more
 * frequent full collections (docs/performance.md has the measurements).
 *
 * V8 reads the flag each time it sets the next limit, so setting it after start takes effect; it
 * ignores flags it does not know, which is why a test checks the effect and not the call.
 */
export function setHeapGrowth(percent: number): void {
  if (percent > 0) setFlagsFromString(`--heap-growing-percent=${percent}`);
}
