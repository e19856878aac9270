import type { Config } from './settings.js';
import type { ConfigVariable } from './environment.js';

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

/** Each variable's value as `config` shows it: secrets and URL passwords masked; null when unset. */
export function maskedVariables(variables: ConfigVariable[]): Record<string, { value: string | null; isDefault: boolean }> {
  return Object.fromEntries(variables.map((variable) => [variable.name, { value: shownValue(variable), isDefault: variable.isDefault }]));
}

function shownValue({ value, kind }: ConfigVariable): string | null {
  if (value === null) return null;
  if (kind === 'secret')
    return value
      .split(',')
      .map((secret) => maskSecret(secret.trim()))
      .join(',');
  return kind === 'url' ? maskUrl(value) : value;
}

/**
 * One line per variable, as a user writes it in .env (`LEASE_SECONDS=30`, quoted where .env needs
 * it): those set first, then those left at their default (marked), then the unset ones, as comments.
 */
export function variableLines(variables: ConfigVariable[]): string[] {
  const rank = (variable: ConfigVariable) => (variable.value === null ? 2 : variable.isDefault ? 1 : 0);
  const assignments = [...variables]
    .sort((a, b) => rank(a) - rank(b))
    .map((variable) => {
      const value = shownValue(variable);
      if (value === null) return [`# ${variable.name}=`, 'not set'];
      return [`${variable.name}=${/^[^\s#"'`\\]+$/.test(value) ? value : JSON.stringify(value)}`, variable.isDefault ? 'default' : ''];
    });
  const width = Math.max(...assignments.map(([assignment]) => assignment!.length));
  return assignments.map(([assignment, note]) => (note ? `${assignment!.padEnd(width)}  # ${note}` : assignment!));
}
