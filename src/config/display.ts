import type { Config } from './settings.js';

/** Keys whose values are credentials, whatever module adds them to the config. */
const SECRET_KEY = /secret|salt|password|token|merchantKey|apiKey/i;
/** Keys holding URLs, which may carry a password (or, for web hooks, a secret path). */
const URL_KEY = /url$/i;
const MASK = '…(masked)';

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

/**
 * The effective configuration with every credential masked, for `webhook-inbox config`. Masking goes
 * by key name, so settings added later are covered without a list to keep in step.
 */
export function maskedConfig(config: Config): Json {
  return mask(config as unknown as Json, '');
}

function mask(value: Json, key: string): Json {
  if (Array.isArray(value)) return value.map((item) => mask(item, key));
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, mask(item, name)]));
  if (typeof value !== 'string') return value;
  if (SECRET_KEY.test(key)) return maskSecret(value);
  if (URL_KEY.test(key)) return maskUrl(value);
  return value;
}

/** Keeps a conventional prefix (`whsec_`, `rzp_`) so an operator can tell which kind of secret is set. */
export function maskSecret(secret: string): string {
  const prefix = /^[a-z]{2,8}_/.exec(secret)?.[0];
  return prefix && secret.length > prefix.length + 8 ? `${prefix}${MASK}` : MASK;
}

/** Hides a URL's password; for http(s) URLs also the path and query, where web hooks keep their secret. */
export function maskUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return MASK; // Unparseable, so where a password would be cannot be told.
  }
  if (url.protocol === 'http:' || url.protocol === 'https:') return url.pathname === '/' && !url.search ? url.origin : `${url.origin}/${MASK}`;
  if (!url.password) return text;
  const masked = text.replace(/^([^:]+:\/\/[^:@/]*):[^@]*@/, `$1:${MASK}@`);
  return masked === text ? MASK : masked;
}

/** One `key  value` line per setting, nested keys dotted; unconfigured sections read "not set". */
export function formatConfig(config: Json): string[] {
  const entries = flatten(config, '');
  const width = Math.max(...entries.map(([key]) => key.length));
  return entries.map(([key, value]) => `${key.padEnd(width)}  ${value}`);
}

function flatten(value: Json, key: string): Array<[string, string]> {
  if (value === null) return [[key, 'not set']];
  if (Array.isArray(value)) return [[key, value.map((item) => (typeof item === 'object' ? JSON.stringify(item) : String(item))).join(', ')]];
  if (typeof value !== 'object') return [[key, String(value)]];
  return Object.entries(value).flatMap(([name, item]) => flatten(item, key ? `${key}.${name}` : name));
}
