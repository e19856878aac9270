import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SERVICE_DOMAINS } from '../../src/service/domains.js';
import { loadConfig } from '../../src/config/load.js';
import { readEnvironment } from '../../src/config/environment.js';

/** A directory without a .env file, so the developer's own .env never leaks into a test. */
export const EMPTY_DIR = mkdtempSync(path.join(tmpdir(), 'wi-env-'));

/**
 * Every variable name the service's configuration reads (the inbox's, and the settings of the domains
 * it may run), observed by reading through a recording environment.
 */
export function variablesRead(): string[] {
  const names = new Set<string>();
  const recording = new Proxy(
    {},
    {
      get(_target, name) {
        if (typeof name === 'string') names.add(name);
        return undefined;
      },
    },
  );
  loadConfig(readEnvironment(recording, EMPTY_DIR).variables, { domains: SERVICE_DOMAINS });
  return [...names].sort();
}
