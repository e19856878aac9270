import { resolve } from 'node:path';
import { sqliteFilePath } from './database-url.js';
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

/**
 * Query parameters that carry a credential: node-postgres reads `password` from the URL, libpq
 * `sslpassword`; other drivers take tokens and keys there.
 */
const SECRET_PARAMETER = /pass|pwd|secret|token|key|credential|auth|signature/i;

/**
 * Hides a URL's password and every query parameter that looks like a credential; for http(s) URLs
 * also the path and query, where web hooks keep their secret. The parts come from the parsed URL,
 * as the drivers read it, so a password holding `@` or `/` is hidden whole.
 */
export function maskUrl(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return maskUnparsed(text);
  }
  if (url.protocol === 'http:' || url.protocol === 'https:') return url.pathname === '/' && !url.search ? url.origin : `${url.origin}/${MASK}`;
  const query = maskedQuery(url.search);
  if (!url.password && query === url.search) return text;
  const userinfo = url.username || url.password ? `${url.username}${url.password ? `:${MASK}` : ''}@` : '';
  const authority = url.host !== '' || text.startsWith(`${url.protocol}//`) ? `//${userinfo}${url.host}` : '';
  return `${url.protocol}${authority}${url.pathname}${query}${url.hash}`;
}

/**
 * A URL the parser refuses: where its host begins cannot be told, so everything up to the last `@`
 * is taken for the credentials, and the query is hidden whole. Without an `@`, a password could be
 * anywhere.
 */
function maskUnparsed(text: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(text)?.[0];
  const at = text.lastIndexOf('@');
  if (!scheme || at < scheme.length) return MASK;
  const rest = text.slice(at + 1);
  const query = rest.search(/[?#]/);
  return `${scheme}${MASK}@${query < 0 ? rest : `${rest.slice(0, query)}?${MASK}`}`;
}

/** `?a=1&password=x` -> `?a=1&password=…(masked)`; the other parameters as written. */
function maskedQuery(search: string): string {
  if (search === '') return search;
  const pairs = search
    .slice(1)
    .split('&')
    .map((pair) => {
      const equals = pair.indexOf('=');
      const name = equals < 0 ? pair : pair.slice(0, equals);
      return SECRET_PARAMETER.test(decoded(name)) ? `${name}=${MASK}` : pair;
    });
  return `?${pairs.join('&')}`;
}

function decoded(text: string): string {
  try {
    return decodeURIComponent(text.replaceAll('+', ' '));
  } catch {
    return text;
  }
}

/**
 * Where a store is, for the start log: the SQLite file's absolute path, or the server and database
 * with any credentials left out (`mysql://…@127.0.0.1:3306/shop`).
 */
export function storeLocation(databaseUrl: string, cwd = process.cwd()): string {
  const url = new URL(databaseUrl);
  if (url.protocol === 'sqlite:') {
    const file = sqliteFilePath(url);
    return 'path' in file ? resolve(cwd, file.path) : maskUrl(databaseUrl);
  }
  return `${url.protocol}//${url.username || url.password ? '…@' : ''}${url.host}${url.pathname}`;
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
